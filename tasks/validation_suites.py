"""The Great Expectations suites, one per flattened frame (see tasks/validation_frames.py)."""

from __future__ import annotations

from typing import Any

from models.schema import KNOWLEDGE_STAGES, RATING_SOURCES, RATING_SPLITS, SPEAKERS, SPLITS, STAGES, STRATEGIES
from tasks.pii import PII_PATTERNS
from tasks.validation_frames import _RECORD_FIELDS, _TURN_FIELDS


def _expectations(suite: str, *, pii_severity: str, text_min: int, text_max: int) -> list[Any]:
    """The expectations of one suite; meta carries the field name and the issue message template."""
    import great_expectations.expectations as gxe

    out: list[Any] = []

    def add(cls: str, column: str | None, message: str, fld: str | None = None, **kw: Any) -> None:
        kw |= {"column": column} if column else {}
        name = fld if fld is not None else (column or "").removesuffix("__type")
        meta = {"field": name, "message": message}
        out.append(getattr(gxe, cls)(meta=meta, **kw))

    def typed(fields: dict[str, tuple[str, bool]]) -> None:
        for name, (kind, required) in fields.items():
            add("ExpectColumnToExist", name, "column missing from the flattened frame")
            if required:
                add("ExpectColumnValuesToNotBeNull", f"{name}__type", "required field is missing or null")
            add("ExpectColumnValuesToBeInSet", f"{name}__type", f"expected {kind}, got {{value}}", value_set=[kind])

    def text(column: str, low: int = text_min) -> None:
        add("ExpectColumnValuesToMatchRegex", column, "is empty or whitespace only", regex=r"\S")
        add(
            "ExpectColumnValueLengthsToBeBetween",
            column,
            f"length {{length}} outside [{low}, {text_max}] characters",
            min_value=low,
            max_value=text_max,
        )

    def pii(*columns: str) -> None:
        for column in columns:
            for kind, pattern in PII_PATTERNS.items():
                add(
                    "ExpectColumnValuesToNotMatchRegex",
                    column,
                    f"contains personal data ({kind})",
                    regex=pattern,
                    severity=pii_severity,
                )

    def one_in(column: str, allowed: tuple[str, ...], label: str) -> None:
        add(
            "ExpectColumnValuesToBeInSet",
            column,
            f"unknown {label} {{value}} (expected one of: {', '.join(allowed)})",
            value_set=list(allowed),
        )

    def split_checks() -> None:
        one_in("split", SPLITS, "split")
        add(
            "ExpectColumnValuesToBeInSet",
            "conversation_in_one_split",
            "conversation {conversation!r} appears in more than one split ({splits}); "
            "a conversation must stay in one split",
            "split",
            value_set=[True],
        )

    if suite in _RECORD_FIELDS:
        typed(_RECORD_FIELDS[suite])
        add(
            "ExpectColumnValuesToBeUnique",
            "id",
            "duplicate id {value} (ids must be unique across all files of the dataset; also at {others})",
        )
    if suite == "knowledge":
        one_in("strategy", STRATEGIES, "strategy")
        one_in("stage", KNOWLEDGE_STAGES, "stage")
        text("text")
        text("title", 1)
        text("source", 1)
        pii("text", "title")
    elif suite == "dialogues":
        add("ExpectColumnValuesToBeBetween", "n_turns", "dialogue has no turns", "turns", min_value=1)
        text("situation")
        split_checks()
        pii("situation", "problem")
    elif suite == "preferences":
        add("ExpectColumnValuesToBeBetween", "n_context", "context has no turns", "context", min_value=1)
        text("chosen")
        text("rejected")
        add(
            "ExpectColumnValuesToBeInSet",
            "chosen_differs",
            "chosen and rejected are the same text",
            "chosen",
            value_set=[True],
        )
        split_checks()
        pii("chosen", "rejected", "rationale")
        one_in("stage", STAGES, "stage")
        one_in("chosen_strategy", STRATEGIES, "strategy")
        one_in("rejected_strategy", STRATEGIES, "strategy")
        add("ExpectColumnValuesToMatchRegex", "rubric_version", "is empty or whitespace only", regex=r"\S")
        add(
            "ExpectColumnValuesToBeInSet",
            "roles_named",
            "roles must name the model of each of client, counselor and judge, and nothing else",
            "roles",
            value_set=[True],
        )
        add(
            "ExpectColumnValuesToBeInSet",
            "criteria_sides",
            "criteria must map chosen and rejected to objects of rubric scores",
            "criteria",
            value_set=[True],
        )
    elif suite == "ratings":
        one_in("source", tuple(RATING_SOURCES), "source")
        one_in("split", RATING_SPLITS, "split")
        text("context", 1)
        text("response", 1)
        add("ExpectColumnValuesToBeInSet", "has_labels", "labels is empty", "labels", value_set=[True])
        pii("context", "response")
    elif suite.endswith("_turns"):
        add(
            "ExpectColumnValuesToBeInSet", "turn__type", "turn must be an object, got {value}", "", value_set=["object"]
        )
        typed(_TURN_FIELDS)
        one_in("speaker", SPEAKERS, "speaker")
        one_in("strategy", STRATEGIES, "strategy")
        text("text", 1)
        pii("text")
    elif suite == "scores":
        add(
            "ExpectColumnValuesToBeInSet",
            "value__type",
            "score must be a number, got {value}",
            "",
            value_set=["number"],
        )
        for a, b in (("value", "lo"), ("hi", "value")):
            add(
                "ExpectColumnPairValuesAToBeGreaterThanB",
                None,
                "score {value} outside [{lo}, {hi}]",
                "",
                column_A=a,
                column_B=b,
                or_equal=True,
                ignore_row_if="either_value_is_missing",
            )
    return out
