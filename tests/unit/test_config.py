from pathlib import Path

import pytest
import yaml

from models.config import ParamsError, load_params


def _write(tmp_path: Path, repo_root: Path, **changes) -> Path:
    params = yaml.safe_load((repo_root / "params.yaml").read_text())
    for dotted, value in changes.items():
        section, key = dotted.split("__")
        params[section][key] = value
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    return path


def test_project_params_are_valid(repo_root):
    params = load_params(repo_root / "params.yaml")
    assert params.grpo.learning_rate > 0
    assert set(params.grpo.rewards) >= {"format", "grounding", "preference", "safety"}


def test_unknown_reward_names_the_key_and_known_names(tmp_path, repo_root):
    path = _write(tmp_path, repo_root, grpo__rewards={"format": 1.0, "empathyy": 1.0})
    with pytest.raises(ParamsError) as err:
        load_params(path)
    message = str(err.value)
    assert "grpo.rewards" in message and "empathyy" in message and "strategy_fit" in message


def test_negative_learning_rate_names_the_key(tmp_path, repo_root):
    path = _write(tmp_path, repo_root, grpo__learning_rate=-1e-5)
    with pytest.raises(ParamsError, match=r"grpo\.learning_rate.*-1e-05"):
        load_params(path)


def test_unknown_key_is_rejected(tmp_path, repo_root):
    path = _write(tmp_path, repo_root, sft__stepz=3)
    with pytest.raises(ParamsError, match=r"sft\.stepz"):
        load_params(path)


def test_unreadable_yaml(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("grpo: [unclosed\n")
    with pytest.raises(ParamsError, match="cannot read"):
        load_params(path)
