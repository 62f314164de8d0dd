from models.dialogue import contexts_for_training, infer_stage, retrieval_query
from models.prompts import THINK_OPEN, build_messages, render_guidance
from models.rewards import format_score, split_completion
from models.text import parse_completion
from models.training_data import build_examples, cold_start_completion

DIALOGUE = {
    "id": "d1",
    "situation": "I failed an exam.",
    "split": "train",
    "turns": [
        {"speaker": "seeker", "text": "I failed my exam."},
        {"speaker": "supporter", "text": "That sounds hard. What happened?", "strategy": "Question"},
        {"speaker": "seeker", "text": "I froze. I feel stupid."},
        {"speaker": "supporter", "text": "You could try a study group.", "strategy": "Providing Suggestions"},
    ],
}
PASSAGES = [
    {"id": "k1", "strategy": "Question", "stage": "Exploration", "title": "Open questions", "text": "Ask open."},
    {"id": "k2", "strategy": "Providing Suggestions", "stage": "Action", "title": "Small steps", "text": "Suggest."},
]


class _Tokenizer:
    def apply_chat_template(self, messages, tokenize, add_generation_prompt):
        return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"


def test_query_rule_uses_the_last_two_seeker_turns():
    query = retrieval_query(DIALOGUE["situation"], DIALOGUE["turns"])
    assert query == "I failed my exam. I froze. I feel stupid."


def test_query_rule_falls_back_to_the_situation_before_the_seeker_speaks():
    opening = [{"speaker": "supporter", "text": "Hi, what brings you here?"}]
    assert retrieval_query(" I failed an exam. ", opening) == "I failed an exam."
    assert retrieval_query("", []) == ""


def test_contexts_end_on_seeker_turns_followed_by_a_reply():
    contexts = contexts_for_training(DIALOGUE)
    assert [len(c) for c in contexts] == [1, 3]
    assert all(c[-1]["speaker"] == "seeker" for c in contexts)


def test_stage_follows_gold_strategy_then_position():
    assert infer_stage(0.9, "Question") == "Exploration"
    assert infer_stage(0.9, "Others") == "Action"
    assert infer_stage(0.1, None) == "Exploration"


def test_guidance_carries_labels_and_prompt_shows_dialogue():
    assert "(Question; stage: Exploration) Open questions" in render_guidance(PASSAGES)
    user = build_messages(DIALOGUE["turns"][:1], PASSAGES)[1]["content"]
    assert "Seeker: I failed my exam." in user and "[2]" in user


def test_examples_open_the_think_block_and_cold_start_target_is_well_formed():
    examples = build_examples([DIALOGUE], lambda q, k: PASSAGES[:k], _Tokenizer(), k=2, max_examples=10, seed=1)
    assert len(examples) == 2
    for example in examples:
        assert example["prompt"].endswith(THINK_OPEN)
        target = cold_start_completion(example)
        think, reply, well_formed = split_completion(target)
        assert well_formed and reply == example["gold_reply"]
        assert example["stage"] in think
        assert format_score(parse_completion(target)) == 1.0


def test_example_order_is_seed_stable_and_capped():
    first = build_examples([DIALOGUE], lambda q, k: PASSAGES, _Tokenizer(), k=2, max_examples=1, seed=7)
    again = build_examples([DIALOGUE], lambda q, k: PASSAGES, _Tokenizer(), k=2, max_examples=1, seed=7)
    assert len(first) == 1 and first == again
