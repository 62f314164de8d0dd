"""The reward model as an MLflow pyfunc: `predict` takes a table of `context` and `reply`, returns scores.

Served as is with `mlflow models serve -m models:/escrag-reward@champion`; a request is
`{"dataframe_records": [{"context": "Seeker: …\\nSupporter: …\\nSeeker: …", "reply": "…"}]}` and the
answer is one raw score per row (higher is better; the GRPO 'preference' reward is its sigmoid). The
`models` and `tasks` packages travel with the logged model (`code_paths`), so serving needs no escrag
checkout, only the pinned requirements.
"""

from __future__ import annotations

from typing import Any

import mlflow.pyfunc

ARTIFACT_KEY = "reward_model"


class RewardModelPyfunc(mlflow.pyfunc.PythonModel):
    """Wraps `models.reward_model.RewardModelScorer` over the logged reward-model folder."""

    def load_context(self, context: Any) -> None:
        from models.reward_model import RewardModelScorer

        self.scorer = RewardModelScorer(context.artifacts[ARTIFACT_KEY])

    # No type hints on predict: MLflow would read them as the input schema (the input is a DataFrame).
    def predict(self, context, model_input, params=None):  # noqa: ANN001, ANN201
        missing = {"context", "reply"} - set(model_input.columns)
        if missing:
            raise ValueError(f"reward model input needs columns context and reply; missing {sorted(missing)}")
        contexts = [str(v) for v in model_input["context"]]
        return self.scorer.score(contexts, [str(v) for v in model_input["reply"]])
