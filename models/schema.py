"""Record formats shared by every layer: the strategy and stage vocabularies and dataset names."""

from __future__ import annotations

# The eight ESConv support strategies, spelled exactly as in ESConv.
STRATEGIES: tuple[str, ...] = (
    "Question",
    "Restatement or Paraphrasing",
    "Reflection of feelings",
    "Self-disclosure",
    "Affirmation and Reassurance",
    "Providing Suggestions",
    "Information",
    "Others",
)

# The three stages of helping (Hill's model, as used by ESConv), plus "any" for stage-free guidance.
STAGES: tuple[str, ...] = ("Exploration", "Comforting", "Action")
KNOWLEDGE_STAGES: tuple[str, ...] = (*STAGES, "any")

SPEAKERS: tuple[str, ...] = ("seeker", "supporter")
SPLITS: tuple[str, ...] = ("train", "eval")

DATASETS: tuple[str, ...] = ("knowledge", "dialogues", "preferences", "ratings")
# Datasets a project may lack: `ratings` arrives with `escrag data import epitome|diasafety`.
OPTIONAL_DATASETS: tuple[str, ...] = ("ratings",)

# Human-rated replies (models/ratings.py): where they come from, their splits and the highest level of
# each source's labels (EPITOME: 0/1/2 per mechanism; DiaSafety: 1 = unsafe).
RATING_SOURCES: dict[str, int] = {"epitome": 2, "diasafety": 1}
RATING_SPLITS: tuple[str, ...] = ("train", "eval", "test")
EPITOME_MECHANISMS: tuple[str, ...] = ("emotional_reactions", "interpretations", "explorations")
