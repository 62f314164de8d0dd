"""The registered policy as one servable MLflow pyfunc: policy, guidance index, embedder and safety layer.

`mlflow models serve -m models:/escrag-policy@champion --env-manager local` (or `escrag serve`) answers
`POST /invocations` with `{"inputs": {"turns": [{"speaker": "seeker", "text": "..."}], "situation": "..."}}`
(or a list of such conversations). Each prediction is `{reply, strategy, guidance_ids, guidance_titles,
safety}` (models.responder); `"params": {"show_reasoning": true}` adds the `<think>` text, for audits.

The model holds everything a reply needs: the policy folder, a copy of the LanceDB index pinned at the
table version the policy was trained with, the MiniLM embedder, and `serving.json` (retrieval settings,
sampling, the crisis reply of params.yaml `serve`). The `models` and `tasks` packages travel with it
(`code_paths`), so serving needs no escrag checkout, only the pinned requirements.
"""

from __future__ import annotations

import json
import tempfile
from importlib.metadata import version as installed_version
from pathlib import Path
from typing import Any

import mlflow.pyfunc

from tasks.project import Project

POLICY, INDEX, EMBEDDER, CONFIG = "policy", "index", "embedder", "config"
CONFIG_FILE = "serving.json"
ARTIFACT_NAME = "policy"
# What serving imports; written out because inferring them imports torchvision, which this torch lacks.
SERVING_PACKAGES = (
    "torch",
    "transformers",
    "safetensors",
    "sentence-transformers",
    "lancedb",
    "pyarrow",
    "pandas",
    "numpy",
    "pydantic",
    "pyyaml",
)
EXAMPLE = {
    "turns": [
        {"speaker": "seeker", "text": "I failed my driving test again today."},
        {"speaker": "supporter", "text": "I'm sorry, that sounds really disappointing. How are you feeling?"},
        {"speaker": "seeker", "text": "Stupid, honestly. Everyone else passed first time."},
    ],
    "situation": "",
}


class EscragPolicyPyfunc(mlflow.pyfunc.PythonModel):
    """Answers conversations with models.responder.Responder, loaded once per process."""

    def load_context(self, context: Any) -> None:
        from models.responder import load_responder

        config = json.loads(Path(context.artifacts[CONFIG]).read_text(encoding="utf-8"))
        artifacts = context.artifacts
        self.responder = load_responder(artifacts[POLICY], artifacts[INDEX], artifacts[EMBEDDER], config)

    # No type hints on predict: MLflow would read them as the input schema (the signature declares it).
    def predict(self, context, model_input, params=None):  # noqa: ANN001, ANN201
        from mlflow.exceptions import MlflowException
        from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE

        from models.responder import ConversationError

        params = params or {}
        answers = []
        for i, (turns, situation) in enumerate(conversations(model_input)):
            try:
                answer = self.responder.respond(
                    turns,
                    situation,
                    show_reasoning=bool(params.get("show_reasoning", False)),
                    max_new_tokens=int(params.get("max_new_tokens") or 0) or None,
                )
            except ConversationError as error:  # the server answers 400 with this message, not 500
                raise MlflowException(f"conversation {i}: {error}", error_code=INVALID_PARAMETER_VALUE) from None
            answers.append(answer)
        return answers


def conversations(model_input: Any) -> list[tuple[Any, str]]:
    """(turns, situation) pairs from what MLflow passes: a DataFrame (served, or after schema enforcement),
    one conversation dict, or a list of them."""
    if hasattr(model_input, "to_dict"):
        records = model_input.to_dict(orient="records")
    elif isinstance(model_input, dict):
        records = [model_input]
    else:
        records = list(model_input)
    pairs = []
    for record in records:
        turns = record.get("turns")
        turns = turns.tolist() if hasattr(turns, "tolist") else turns
        situation = record.get("situation")
        pairs.append((turns, situation if isinstance(situation, str) else ""))
    return pairs


def signature() -> Any:
    """Input: a conversation (turns required, situation optional); params: show_reasoning, max_new_tokens."""
    from mlflow.models import ModelSignature
    from mlflow.types.schema import Array, ColSpec, Object, ParamSchema, ParamSpec, Property, Schema

    turn = Object([Property("speaker", "string"), Property("text", "string")])
    inputs = Schema([ColSpec(Array(turn), "turns"), ColSpec("string", "situation", required=False)])
    params = ParamSchema([ParamSpec("show_reasoning", "boolean", False), ParamSpec("max_new_tokens", "long", 0)])
    return ModelSignature(inputs=inputs, params=params)


def serving_config(project: Project, index_version: int) -> dict[str, Any]:
    """serving.json: what the pyfunc needs besides the folders, from params.yaml."""
    params = project.params
    return {
        "compute": params.compute.model_dump(),
        "sampling": {"temperature": params.evaluate.temperature, "top_p": params.evaluate.top_p},
        "retrieval": {
            "table": params.index.table,
            "version": int(index_version),
            "k": params.retrieval.k,
            "mode": params.retrieval.mode,
            "max_per_strategy": params.retrieval.max_per_strategy,
        },
        "max_new_tokens": params.serve.max_new_tokens,
        "seed": params.serve.seed,
        "fallback_reply": params.serve.fallback_reply,
        "crisis_reply": params.serve.crisis.text(),
    }


def pip_requirements() -> list[str]:
    return [f"{name}=={installed_version(name)}" for name in SERVING_PACKAGES]


def log_policy_model(project: Project, policy_dir: Path, index_version: int, registered_name: str | None) -> Any:
    """Log (and, with `registered_name`, register) the servable policy in the active run; its ModelInfo."""
    import mlflow

    import models
    import tasks
    from models.embedder import embedder_path

    with tempfile.TemporaryDirectory(prefix="escrag-serving-") as tmp:
        config_path = Path(tmp) / CONFIG_FILE
        config_path.write_text(json.dumps(serving_config(project, index_version), indent=2), encoding="utf-8")
        return mlflow.pyfunc.log_model(
            name=ARTIFACT_NAME,
            python_model=EscragPolicyPyfunc(),
            artifacts={
                POLICY: str(policy_dir),
                INDEX: str(project.artifact("index")),
                EMBEDDER: embedder_path(),
                CONFIG: str(config_path),
            },
            code_paths=[str(Path(models.__file__).parent), str(Path(tasks.__file__).parent)],
            signature=signature(),
            input_example=(EXAMPLE, {"show_reasoning": False}),
            pip_requirements=pip_requirements(),
            registered_model_name=registered_name,
            metadata={"escrag_servable": 1, "index_table_version": int(index_version)},
        )
