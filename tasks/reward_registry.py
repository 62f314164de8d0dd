"""Register the preference reward model in MLflow as `escrag-reward` and load it back by alias.

The reward model folder (a MiniLM pair encoder, written by `models.reward_model.train_reward_model`) is
logged as an MLflow pyfunc (`tasks.reward_pyfunc`) whose input is a table of `context` and `reply`,
so it can be served as is (`mlflow models serve -m models:/escrag-reward@champion`). The reward
model's `max_length` and text format travel in the model's metadata; the held-out pairwise accuracy is
a metric of the logged model and a tag of the registered version.

The `reward_model` stage registers what it trained (`register_reward_model`, inside its run); GRPO
and evaluation read the scorer from the stage's declared output folder, placed by the project's
`compute` (`preference_scorer`), and tag their runs with the registered version of that folder
(`reward_model_version`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tasks.project import Project
from tasks.registry import PIP_REQUIREMENTS, run_of
from tasks.tracking import CHAMPION, REWARD_MODEL, client, configure, tracked_run

if TYPE_CHECKING:
    from models.compute import Compute
    from models.reward_model import RewardModelScorer

logger = logging.getLogger(__name__)

REWARD_URI = f"models:/{REWARD_MODEL}@{CHAMPION}"
ACCURACY_KEY = "heldout_pairwise_accuracy"
ARTIFACT_NAME = "reward_model"


@dataclass(frozen=True)
class RegisteredReward:
    """A registered reward-model version and where it came from."""

    name: str
    version: str
    alias: str
    run_id: str
    heldout_pairwise_accuracy: float
    reused: bool = False

    @property
    def uri(self) -> str:
        return f"models:/{self.name}@{self.alias}"


def _metadata(model_dir: Path) -> dict:
    from models.reward_model import METADATA_FILE

    path = model_dir / METADATA_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


def _accuracy(metrics: Mapping[str, float], meta: dict) -> float:
    value = metrics.get(ACCURACY_KEY, meta.get("metrics", {}).get(ACCURACY_KEY, math.nan))
    return float(value) if value is not None else math.nan


def _run_context(project: Project, run_id: str | None):
    """The active run when it is the one asked for (or none was asked for), else a run opened here."""
    import mlflow

    active = mlflow.active_run()
    if active is not None and run_id in (None, active.info.run_id):
        return contextlib.nullcontext(active)
    if active is not None:
        raise RuntimeError(f"run {active.info.run_id} is active; cannot log the reward model to run {run_id}")
    return tracked_run(project, "reward_model", run_id=run_id)


def register_reward_model(
    project: Project,
    metrics: Mapping[str, float],
    *,
    model_dir: Path | None = None,
    run_id: str | None = None,
    alias: str = CHAMPION,
) -> RegisteredReward:
    """Log the reward model folder to MLflow, register it as `escrag-reward` and point `alias` at it.

    Logs into the active run (the `reward_model` stage's), else into `run_id`, else into a new tracked
    run. A run that already registered a version reuses it (the alias is still moved). The held-out
    pairwise accuracy (`metrics`, else the folder's `reward_model.json`) becomes a metric of the logged
    model and the version tag `heldout_pairwise_accuracy`; `n_heldout`, `max_length` and the text
    format are tags too. The alias moves unconditionally: the reward model is part of the data
    pipeline's output, not a candidate that competes (held-out sets differ between data versions).
    """

    model_dir = Path(model_dir or project.artifact("reward_model"))
    if not (model_dir / "config.json").is_file():
        raise FileNotFoundError(f"no reward model in {model_dir} (config.json missing)")
    meta = _metadata(model_dir)
    accuracy = _accuracy(metrics, meta)
    configure(project)
    registry = client()
    with _run_context(project, run_id) as run:
        run_id = run.info.run_id
        existing = registry.search_model_versions(f"name='{REWARD_MODEL}' and run_id='{run_id}'")
        reused = bool(existing)
        if reused:
            version = str(existing[0].version)
            logger.info("run %s already registered %s version %s", run_id, REWARD_MODEL, version)
        else:
            version = _log_and_register(model_dir, meta, accuracy)
    tags = {
        ACCURACY_KEY: f"{accuracy:.4f}",
        "n_heldout": str(metrics.get("n_heldout", meta.get("metrics", {}).get("n_heldout", ""))),
        "max_length": str(meta.get("max_length", "")),
        "text_format": str(meta.get("text_format", "")),
        "selected": str(meta.get("selected", "trained")),  # "start" when training did not beat the zero-shot start
    }
    for key, value in tags.items():
        registry.set_model_version_tag(REWARD_MODEL, version, key, value)
    registry.set_registered_model_alias(REWARD_MODEL, alias, version)
    logger.info("%s version %s is now @%s (held-out pairwise accuracy %.3f)", REWARD_MODEL, version, alias, accuracy)
    return RegisteredReward(REWARD_MODEL, version, alias, run_id, accuracy, reused)


def _log_and_register(model_dir: Path, meta: dict, accuracy: float) -> str:
    import mlflow
    import pandas as pd

    import models
    import tasks
    from tasks.reward_pyfunc import ARTIFACT_KEY, RewardModelPyfunc

    example = pd.DataFrame({"context": ["Seeker: I lost my job today."], "reply": ["That sounds hard. How are you?"]})
    info = mlflow.pyfunc.log_model(
        name=ARTIFACT_NAME,
        python_model=RewardModelPyfunc(),
        artifacts={ARTIFACT_KEY: str(model_dir)},
        code_paths=[str(Path(models.__file__).parent), str(Path(tasks.__file__).parent)],
        input_example=example,
        pip_requirements=PIP_REQUIREMENTS,
        registered_model_name=REWARD_MODEL,
        metadata={k: meta[k] for k in ("max_length", "text_format", "seed") if k in meta},
    )
    if math.isfinite(accuracy):
        mlflow.log_metric(ACCURACY_KEY, accuracy, model_id=info.model_id)
    return str(info.registered_model_version)


def load_reward_scorer(
    uri: str = REWARD_URI, project: Project | None = None, compute: Compute | None = None
) -> RewardModelScorer:
    """A `RewardModelScorer` from a registered reward model (`models:/escrag-reward@champion` by default).

    `project` points MLflow at the project's tracking store; `compute` places the scorer (else it stays
    where the pyfunc put it: auto). The scorer is the one the pyfunc serves: same folder, same `max_length`.
    """
    import mlflow

    if project is not None:
        mlflow.set_tracking_uri(project.tracking_uri)
    scorer = mlflow.pyfunc.load_model(uri).unwrap_python_model().scorer
    return scorer.place(compute) if compute is not None else scorer


def reward_model_version(project: Project) -> str:
    """The registered version of the `reward_model` stage's output, as its declared report names it.

    The registry alias is not read: it may have moved since the stage ran. When the report names no
    version that this tracking store holds (a store created after the stage ran, which `dvc.lock` then
    skips), the stage's folder is registered first, with the metrics of its report.
    """
    from mlflow.exceptions import MlflowException

    configure(project)
    report = project.reports / "reward_model.json"
    saved = json.loads(report.read_text()) if report.is_file() else {}
    if saved.get("registered_version"):
        try:
            return str(client().get_model_version(REWARD_MODEL, str(saved["registered_version"])).version)
        except MlflowException:
            pass
    metrics = {k: float(v) for k, v in saved.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return str(register_reward_model(project, metrics).version)


def preference_scorer(project: Project) -> RewardModelScorer:
    """The preference scorer from the `reward_model` stage's declared output, on the project's device."""
    from models.reward_model import RewardModelScorer

    return RewardModelScorer(project.artifact("reward_model"), compute=project.compute)


def scorer_from(project: Project, source: str | None) -> RewardModelScorer:
    """The preference scorer of `source` (a folder or models:/ URI), else the project's stage output, else
    the registry's champion."""
    from models.reward_model import RewardModelScorer

    if source and source.startswith("models:/"):
        run_of(source)  # an unknown name, version or alias: UnknownModelError
        return load_reward_scorer(source, project, project.compute)
    folder = Path(source) if source else project.artifact("reward_model")
    if (folder / "config.json").is_file():
        return RewardModelScorer(folder, compute=project.compute)
    if source:
        raise FileNotFoundError(f"--reward-model {source}: not a reward model folder (no config.json) or models:/ URI")
    try:
        return load_reward_scorer(REWARD_URI, project, project.compute)
    except Exception as exc:  # noqa: BLE001 - MLflow raises generic errors for a missing model or alias
        raise FileNotFoundError(
            f"no reward model: {folder} is missing and {REWARD_URI} cannot be loaded ({exc}); "
            "run `escrag stage reward_model` or pass --reward-model"
        ) from None


def scorer_source(project: Project, source: str | None) -> str:
    """Which reward model `scorer_from` reads, in words for a report."""
    if source:
        return source
    folder = project.artifact("reward_model")
    if (folder / "config.json").is_file():
        return str(folder.relative_to(project.root)) if folder.is_relative_to(project.root) else str(folder)
    return REWARD_URI
