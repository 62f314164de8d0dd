"""`escrag chat` and `escrag serve` without a model: the conversation is kept, the side line says what
the layer did, and the server is started with this environment's tools."""

from __future__ import annotations

import sys
from pathlib import Path

from flows.serve_cli import chat_loop, serve_command, serve_environment, side_line


class RecordingModel:
    """Answers every conversation alike, and keeps what it was asked."""

    def __init__(self) -> None:
        self.asked: list[list[dict]] = []

    def predict(self, data, params=None):  # noqa: ANN001, ANN201
        self.asked.append([dict(t) for t in data["turns"]])
        n = len(self.asked)
        safety = {"action": "kept", "replaced": False, "reasons": []}
        return [{"reply": f"reply {n}", "strategy": "Question", "guidance_titles": ["A", "B"], "safety": safety}]


def test_chat_keeps_the_whole_conversation() -> None:
    inputs = iter(["first", "second", "", "third", "/quit", "never read"])
    out: list[str] = []
    model = RecordingModel()
    assert chat_loop(model, "", False, read=lambda _: next(inputs), write=out.append) == 0
    assert [len(turns) for turns in model.asked] == [1, 3, 5]
    assert model.asked[-1][-2] == {"speaker": "supporter", "text": "reply 2"}
    assert out.count("escrag> reply 3") == 1 and sum(line.startswith("  [strategy: Question") for line in out) == 3


def test_reset_starts_a_new_conversation_and_end_of_input_ends() -> None:
    inputs = iter(["first", "/reset", "again"])

    def read(_: str) -> str:
        try:
            return next(inputs)
        except StopIteration:
            raise EOFError from None

    model = RecordingModel()
    assert chat_loop(model, "", False, read=read, write=lambda _: None) == 0
    assert [len(turns) for turns in model.asked] == [1, 1]


def test_side_line_names_a_replacement_and_why() -> None:
    answer = {"strategy": "Others", "guidance_titles": [], "safety": {"action": "replaced_unsafe", "replaced": True,
              "reasons": ["does not meet the crisis protocol"]}}  # fmt: skip
    assert (
        side_line(answer)
        == "  [strategy: Others | guidance: none | safety: replaced_unsafe (does not meet the crisis protocol)]"
    )


def test_server_runs_with_this_environments_tools_and_the_projects_store() -> None:
    command = serve_command("models:/escrag-policy@champion", "127.0.0.1", 5005, 1)
    assert command[0] == str(Path(sys.executable).with_name("mlflow")) and "--env-manager" in command
    env = serve_environment("sqlite:////p/.mlflow/mlflow.db")
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)
    assert env["MLFLOW_TRACKING_URI"] == "sqlite:////p/.mlflow/mlflow.db"
