"""Flow-run state hooks: a failed or crashed run tells the team's webhook (tasks.notify)."""

from __future__ import annotations

from typing import Any

from tasks import notify


def _ui_link(flow_run_id: Any) -> str | None:
    from prefect.settings import PREFECT_UI_URL

    base = PREFECT_UI_URL.value()
    return f"{base.rstrip('/')}/runs/flow-run/{flow_run_id}" if base else None


def notify_failure(flow: Any, flow_run: Any, state: Any) -> None:
    """on_failure / on_crashed hook: the run, its final state and its message, to the webhook."""
    notify.send(
        notify.message(
            "failure",
            f"flow run {flow_run.name} ({flow.name}) is {state.name}",
            flow=flow.name,
            flow_run=flow_run.name,
            flow_run_id=str(flow_run.id),
            state=state.name,
            error=(state.message or "")[:500],
            ui=_ui_link(flow_run.id),
        )
    )


FAILURE_HOOKS: dict[str, list] = {"on_failure": [notify_failure], "on_crashed": [notify_failure]}
