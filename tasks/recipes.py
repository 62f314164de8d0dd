"""Recipes: named overlays of `params.yaml` (recipes/NAME.yaml), applied by writing them into it.

Writing the values into `params.yaml` (comments kept) is what makes DVC see them as stage params, so a
recipe re-runs exactly the stages whose settings it changes, and `git diff params.yaml` shows it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from models.config import Params, ParamsError, describe_error

RECIPES_DIR = "recipes"


def recipe_path(root: Path, name: str) -> Path:
    """`recipes/NAME.yaml` of the project, or NAME itself when it is a path to a file."""
    candidate = Path(name)
    if candidate.suffix in (".yaml", ".yml") and candidate.is_file():
        return candidate
    path = root / RECIPES_DIR / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in (root / RECIPES_DIR).glob("*.yaml"))
        raise ParamsError(f"no recipe {name!r} (known: {', '.join(known) or 'none'}; or give a .yaml path)")
    return path


def _merge(target: Any, overlay: dict, prefix: str, changed: list[str]) -> None:
    for key, value in overlay.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value, f"{name}.", changed)
        elif target.get(key) != value:
            target[key] = value
            changed.append(name)


def _load(yaml: Any, path: Path) -> Any:
    """`path` parsed; ParamsError naming it when it is not readable YAML."""
    from ruamel.yaml import YAMLError

    try:
        return yaml.load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, YAMLError) as exc:
        raise ParamsError(f"{path}: not readable YAML ({' '.join(str(exc).split())[:300]})") from None


def apply_recipe(params_path: Path, recipe: Path, accept: Callable[[Params], Any] | None = None) -> list[str]:
    """Write the recipe's values into `params_path`; returns the dotted keys that changed.

    The merged settings are validated first, then passed to `accept` (which may raise, for example when
    this machine lacks the recipe's device): on any error `params.yaml` stays as it was.
    """
    from ruamel.yaml import YAML

    yaml = YAML()  # round-trip: the comments of params.yaml stay
    overlay = _load(yaml, recipe) or {}
    if not isinstance(overlay, dict):
        raise ParamsError(f"{recipe}: expected a mapping at the top level")
    params = _load(yaml, params_path)
    changed: list[str] = []
    _merge(params, overlay, "", changed)
    try:
        merged = Params.model_validate(params)
    except ValidationError as exc:
        raise ParamsError(describe_error(exc, recipe)) from exc
    if accept is not None:
        accept(merged)
    if changed:
        staging = params_path.with_suffix(".yaml.partial")
        with staging.open("w", encoding="utf-8") as handle:
            yaml.dump(params, handle)
        staging.replace(params_path)
    return changed
