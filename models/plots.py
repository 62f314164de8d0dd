"""PNG plots a person would rather look at than read."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; no display on workers
    import matplotlib.pyplot as plt

    return plt


def plot_reward_curve(curve: Sequence[Mapping[str, float]], path: Path, window: int = 5) -> Path:
    """Training reward per GRPO step with a moving average."""
    plt = _pyplot()
    steps = [row["step"] for row in curve]
    rewards = [row["reward"] for row in curve]
    smooth = [
        sum(rewards[max(0, i - window + 1) : i + 1]) / len(rewards[max(0, i - window + 1) : i + 1])
        for i in range(len(rewards))
    ]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, rewards, "o-", alpha=0.4, label="reward per step")
    ax.plot(steps, smooth, "-", linewidth=2, label=f"moving average ({window})")
    ax.set(xlabel="GRPO step", ylabel="weighted reward", title="ESCRAG-R1 training reward")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_comparison(summaries: Mapping[str, Mapping[str, float]], path: Path) -> Path:
    """Grouped bars of the per-reply metrics (each in [0, 1]) per model (candidate, base, champion)."""
    from models.schema import REPLY_METRICS

    plt = _pyplot()
    shown = (*REPLY_METRICS, "format_compliance")
    metrics = [m for m in shown if any(m in s for s in summaries.values())]
    width = 0.8 / max(len(summaries), 1)
    fig, ax = plt.subplots(figsize=(9, 4))
    for i, (name, summary) in enumerate(summaries.items()):
        xs = [j + i * width for j in range(len(metrics))]
        ax.bar(xs, [summary.get(m, 0.0) for m in metrics], width, label=name)
    ax.set_xticks([j + width * (len(summaries) - 1) / 2 for j in range(len(metrics))])
    ax.set_xticklabels([m.replace("empathy_", "empathy: ") for m in metrics], rotation=30, ha="right")
    ax.set(ylabel="mean on held-out turns", ylim=(0, 1), title="Independent evaluators, per model")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
