"""The independent evaluators as an MLflow pyfunc: `predict` takes a table of `context` and `reply` and
returns one column per evaluator (`strategy`, `empathy_<mechanism>`, `risk_ignorance`).

`mlflow models serve -m models:/escrag-evaluators@champion` serves them; a request is
`{"dataframe_records": [{"context": "…", "reply": "…"}]}`. The `models` package travels with the logged
model (`code_paths`), so serving needs no escrag checkout.
"""

from __future__ import annotations

from typing import Any

import mlflow.pyfunc

ARTIFACT_KEY = "evaluators"


class EvaluatorsPyfunc(mlflow.pyfunc.PythonModel):
    """Wraps `models.evaluators.Evaluators` over the logged bundle folder."""

    def load_context(self, context: Any) -> None:
        from pathlib import Path

        from models.evaluators import Evaluators

        self.evaluators = Evaluators.load(Path(context.artifacts[ARTIFACT_KEY]))

    # No type hints on predict: MLflow would read them as the input schema (the input is a DataFrame).
    def predict(self, context, model_input, params=None):  # noqa: ANN001, ANN201
        import pandas as pd

        missing = {"context", "reply"} - set(model_input.columns)
        if missing:
            raise ValueError(f"evaluators input needs columns context and reply; missing {sorted(missing)}")
        contexts = [str(v) for v in model_input["context"]]
        return pd.DataFrame(self.evaluators.score(contexts, [str(v) for v in model_input["reply"]]))
