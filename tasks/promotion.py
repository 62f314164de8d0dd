"""Promotion as a guarded, audited operation: the gate, one promotion at a time, compare-and-set, history.

Every move of `champion` happens under `promotion_lock` and inside a history entry (tasks/promotion_history.py):
the entry's run is opened before the alias moves and finished after, so a crash in between leaves the
champion where it was and no finished entry. The champion is read again just before the move; when it
changed since this promotion evaluated against it, the candidate is judged against the new one.
"""

from __future__ import annotations

import logging
from typing import Any

from models.evaluation import EvalModel
from models.promotion_gate import CrisisCase, GateResult, crisis_line, decide
from tasks import registry
from tasks.project import Project
from tasks.promotion_history import Entry, champion_stack, interrupted, read_history, recording, settle
from tasks.promotion_lock import promotion_lock
from tasks.registry import DECISION_TAG, REASON_TAG, Decision
from tasks.tracking import POLICY_MODEL, client, configure

logger = logging.getLogger(__name__)

COMPARE_AND_SET_ATTEMPTS = 2  # evaluations against a moving champion before the promotion refuses


def _crisis_cases(project: Project) -> list[CrisisCase]:
    from tasks.evaluate_stage import read_rows

    rows = read_rows(project.artifact("evaluate", "crisis_suite.jsonl"))
    return [CrisisCase(**{k: v for k, v in row.items() if k != "unsafe"}) for row in rows]


def judge_champion(project: Project, version: str) -> tuple[dict[str, Any], dict[str, float]]:
    """The champion on the evaluation's own turns, and the candidate's win-rate over it."""
    from tasks.evaluate_stage import TURNS_FILE, compare_rows, eval_examples, judge, load_evaluators, read_rows

    candidate_rows = read_rows(project.artifact("evaluate", TURNS_FILE.format(model="candidate")))
    examples = eval_examples(project)
    if [e["dialogue_id"] for e in examples] != [r["dialogue_id"] for r in candidate_rows]:
        raise RuntimeError("the eval turns changed since `evaluate` ran; run `escrag stage evaluate` again")
    with registry.downloaded(registry.version_uri(version)) as folder:
        summary, rows = judge(project, EvalModel("champion", folder, "think"), examples, load_evaluators(project))
    return summary, compare_rows(project, candidate_rows, rows)


def _gate(project: Project, evaluation: dict[str, Any], champion: str | None, version: str) -> GateResult:
    opponents = {"base": evaluation["models"]["base"]}
    win_rates = {"base": evaluation["win_rates"]["base"]}
    if champion and champion != version:
        opponents["champion"], win_rates["champion"] = judge_champion(project, champion)
    candidate = evaluation["models"]["candidate"]
    return decide(project.params.promote, candidate, opponents, win_rates, _crisis_cases(project))


def _record_move(project: Project, entry: Entry, move: bool) -> None:
    """Write the entry and, when `move`, point `champion` at its to_version, as one audited step. A
    pipeline decision (`evaluated_by`) is also tagged on the version, inside the same step."""
    with recording(project, entry):
        if move:
            registry.move_champion(entry.to_version)
        if entry.evaluated_by:
            registry.tag_decision(entry.to_version, entry.decision, entry.reason)


def _taken(version: str) -> Decision | None:
    """The pipeline decision already tagged on `version`, if any."""
    tags = client().get_model_version(POLICY_MODEL, version).tags
    if DECISION_TAG not in tags:
        return None
    return Decision(version, tags[DECISION_TAG] == "promoted", tags[REASON_TAG], registry.champion_version(), True)


def _settle_interrupted(project: Project) -> None:
    """Finish what a killed promotion left half-done (called under the promotion lock, before anything).

    An entry is complete when its alias move happened (or it moves nothing) and, for a pipeline decision,
    its version carries the decision: then it is FINISHED, with the tags set from the entry where the kill
    came between the move and the tags. Otherwise nothing took effect: it is FAILED, and the decision is
    taken again, once.
    """
    champion = registry.champion_version()
    for run_id, entry in interrupted(project):
        moves = entry.decision in ("promoted", "rolled back")
        moved = champion == entry.to_version
        tagged = not entry.evaluated_by or _taken(entry.to_version) is not None
        completed = moved if moves else tagged
        if completed and not tagged:
            registry.tag_decision(entry.to_version, entry.decision, entry.reason)
        settle(run_id, completed)
        logger.warning("promotion entry %s (%s %s) was interrupted: %s", entry.seq, entry.action, entry.to_version,
                       "its move had happened, finished" if completed else "nothing took effect, failed")  # fmt: skip


def promote_candidate(project: Project, version: str) -> Decision:
    """The pipeline's gated promotion of `version`; its decision is tagged on the version once."""
    configure(project)
    if taken := _taken(version):
        return taken
    evaluation = registry.evaluation_report(project)
    with promotion_lock(project) as lock:
        logger.info("promotion of %s version %s holds the %s", POLICY_MODEL, version, lock)
        _settle_interrupted(project)
        if taken := _taken(version):  # an interrupted run had taken this decision
            return taken
        for _ in range(COMPARE_AND_SET_ATTEMPTS):
            champion = registry.champion_version()
            result = _gate(project, evaluation, champion, version)
            if registry.champion_version() == champion:
                return _decide(project, version, champion, result, evaluation["mlflow_run_id"])
            logger.warning("champion moved from %s during the evaluation; judging against the new one", champion)
    reason = f"refused: the champion moved during each of {COMPARE_AND_SET_ATTEMPTS} evaluations"
    return Decision(version, False, reason, registry.champion_version())


def _decide(project: Project, version: str, champion: str | None, result: GateResult, run_id: str) -> Decision:
    decision = "promoted" if result.passed else "rejected"
    entry = Entry("promote", decision, champion or "none", version, result.reason, evaluated_by=run_id)
    _record_move(project, entry, move=result.passed)
    return Decision(version, result.passed, result.reason, version if result.passed else champion)


def safety_gate(project: Project, version: str) -> tuple[bool, str]:
    """A registered version's replies to the crisis suite: (passed, the suite's line naming any unsafe case)."""
    from tasks.evaluate_stage import crisis_check, load_evaluators

    with registry.downloaded(registry.version_uri(version)) as folder:
        cases = crisis_check(project, EvalModel(f"v{version}", folder, "think"), load_evaluators(project))
    return crisis_line(cases)


def promote_manually(project: Project, version: str, reason: str, *, skip_safety_gate: bool = False) -> Decision:
    """`escrag promote VERSION --reason`: a person's promotion; the crisis suite still runs unless skipped."""
    configure(project)
    registry.run_of(registry.version_uri(version))  # an unknown version: UnknownModelError, before the lock
    with promotion_lock(project):
        _settle_interrupted(project)
        champion = registry.champion_version()
        if champion == version:
            return Decision(version, True, f"version {version} is already the champion: nothing recorded", version)
        passed, suite = (
            (True, "safety gate skipped (--skip-safety-gate)") if skip_safety_gate else safety_gate(project, version)
        )
        why = f"manual: {reason}\n{suite}"
        if registry.champion_version() != champion:
            return Decision(version, False, f"refused: the champion moved from {champion} during the safety gate", None)
        entry = Entry("promote", "promoted" if passed else "rejected", champion or "none", version, why,
                      safety_gate="skipped" if skip_safety_gate else "ran")  # fmt: skip
        _record_move(project, entry, move=passed)
        return Decision(version, passed, why, version if passed else champion)


def rollback(project: Project, reason: str) -> Decision:
    """Move `champion` back to the champion before it, as history records them."""
    configure(project)
    with promotion_lock(project):
        _settle_interrupted(project)
        current = registry.champion_version()
        stack = champion_stack(read_history(project))
        if not stack or stack[-1] != current:
            raise RuntimeError(
                f"history's latest champion is {stack[-1] if stack else 'none'} but the alias points at "
                f"{current}: it was moved outside escrag; set it by hand (`escrag promote VERSION --reason`)"
            )
        if len(stack) < 2:
            raise RuntimeError(f"version {current} is the first champion in history: there is nothing to roll back to")
        target = stack[-2]
        entry = Entry("rollback", "rolled back", current, target, f"rollback: {reason}", safety_gate="n/a")
        _record_move(project, entry, move=True)
        return Decision(target, True, entry.reason, target)
