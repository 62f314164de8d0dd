"""`escrag status`: where the tracking store is, which data version is current, who is champion."""

from __future__ import annotations

from typing import Any

from tasks.dvc_ops import data_md5
from tasks.project import Project


def project_status(project: Project) -> dict[str, Any]:
    from tasks.tracking import CHALLENGER, CHAMPION, POLICY_MODEL, client, configure

    configure(project)
    registry = client()
    aliases = {}
    for alias in (CHAMPION, CHALLENGER):
        try:
            mv = registry.get_model_version_by_alias(POLICY_MODEL, alias)
            aliases[alias] = {"name": POLICY_MODEL, "version": str(mv.version), "run_id": mv.run_id}
        except Exception:  # noqa: BLE001 - alias or model not there yet
            aliases[alias] = None
    return {
        "project": str(project.root),
        "tracking_uri": project.tracking_uri,
        "data_version": data_md5(project.root),
        "champion": aliases[CHAMPION],
        "challenger": aliases[CHALLENGER],
    }


def render_status(status: dict[str, Any]) -> str:
    def model(entry: dict | None) -> str:
        return f"{entry['name']} version {entry['version']} (run {entry['run_id']})" if entry else "none"

    return "\n".join(
        [
            f"project:       {status['project']}",
            f"tracking URI:  {status['tracking_uri']}",
            f"data version:  {status['data_version'] or 'unversioned'}",
            f"champion:      {model(status['champion'])}",
            f"challenger:    {model(status['challenger'])}",
        ]
    )
