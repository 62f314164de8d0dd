"""The `evaluators` stage: train the independent evaluators, report their held-out scores, register them.

They are registered as `escrag-evaluators` (alias `champion`), an MLflow pyfunc over `context` and
`reply` (tasks/evaluators_pyfunc.py). Evaluation reads them from the stage's declared output folder.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from models.records import load_records
from tasks.project import Project
from tasks.tracking import CHAMPION, EVALUATORS_MODEL, client, log_jsonl_dataset, tracked_run
from tasks.train_stages import dataset_digest, write_json

logger = logging.getLogger(__name__)

ARTIFACT_NAME = "evaluators"


def evaluators(project: Project) -> dict:
    """Train every evaluator whose data is there; report held-out scores and what was left out."""
    import mlflow

    from models.evaluator_training import train_evaluators

    settings = project.params.evaluators
    dialogues = load_records(project.data, "dialogues")
    ratings = load_records(project.data, "ratings")
    bundle = train_evaluators(dialogues, ratings, c=settings.c, min_df=settings.min_df, seed=project.params.seed)
    folder = project.artifact(ARTIFACT_NAME)
    bundle.save(folder)
    report: dict[str, Any] = {"evaluators": list(bundle.classifiers), "heldout": bundle.heldout}
    report["missing"] = bundle.missing
    with tracked_run(project, "evaluators") as run:
        for name, records in (("dialogues", dialogues), ("ratings", ratings)):
            if records:
                digest = dataset_digest(project, name)
                log_jsonl_dataset(project.data / name, records, name, digest, "training")
        mlflow.log_params({f"evaluators.{k}": v for k, v in settings.model_dump().items()})
        metrics = {f"heldout.{n}.{k}": v for n, scores in bundle.heldout.items() for k, v in scores.items()}
        mlflow.log_metrics(metrics)
        mlflow.set_tags({f"evaluators.missing.{n}": why for n, why in bundle.missing.items()})
        report["registered_version"] = _register(folder, report)
        report["mlflow_run_id"] = run.info.run_id
    write_json(project.reports / "evaluators.json", report)
    return report


def _register(folder: Path, report: dict[str, Any]) -> str:
    import mlflow
    import pandas as pd
    import sklearn

    import models
    from tasks.evaluators_pyfunc import ARTIFACT_KEY, EvaluatorsPyfunc
    from tasks.registry import PIP_REQUIREMENTS

    example = pd.DataFrame({"context": ["I lost my job today."], "reply": ["That sounds hard. How are you?"]})
    info = mlflow.pyfunc.log_model(
        name=ARTIFACT_NAME,
        python_model=EvaluatorsPyfunc(),
        artifacts={ARTIFACT_KEY: str(folder)},
        code_paths=[str(Path(models.__file__).parent)],
        input_example=example,
        pip_requirements=[*PIP_REQUIREMENTS, f"scikit-learn=={sklearn.__version__}", "pandas"],
        registered_model_name=EVALUATORS_MODEL,
    )
    version = str(info.registered_model_version)
    registry = client()
    registry.set_model_version_tag(EVALUATORS_MODEL, version, "evaluators", ",".join(report["evaluators"]))
    registry.set_model_version_tag(EVALUATORS_MODEL, version, "missing", ",".join(report["missing"]) or "none")
    registry.set_registered_model_alias(EVALUATORS_MODEL, CHAMPION, version)
    logger.info("%s version %s is now @%s", EVALUATORS_MODEL, version, CHAMPION)
    return version
