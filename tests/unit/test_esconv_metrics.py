"""ESConv's automatic metrics, against values worked out by hand from the reference's definitions."""

from __future__ import annotations

import pytest

from models.esconv_metrics import distinct, esconv_metrics, lcs_length, rouge_l, tokenize


def test_tokenize_lowercases_and_splits_like_the_treebank_tokenizer():
    assert tokenize("I'm fine. How are YOU?") == ["i", "'m", "fine", ".", "how", "are", "you", "?"]
    assert tokenize("Don't worry, really!") == ["do", "n't", "worry", ",", "really", "!"]


def test_identical_replies_score_full_marks():
    scores = esconv_metrics(["That sounds really hard for you ."], ["That sounds really hard for you ."])
    assert scores["bleu_2"] == pytest.approx(100) and scores["bleu_4"] == pytest.approx(100)
    assert scores["rouge_l"] == pytest.approx(100) and scores["length"] == 7


def test_unrelated_replies_score_near_zero():
    scores = esconv_metrics(["the cat sat on the mat"], ["quantum fields never sleep"])
    assert scores["rouge_l"] == 0 and scores["bleu_2"] < 5


def test_rouge_l_uses_beta_1_2():
    # LCS 2 of "the cat" in "the cat sat": P = 1, R = 2/3; F = (1 + 1.44) P R / (R + 1.44 P)
    assert rouge_l(["the", "cat", "sat"], ["the", "cat"]) == pytest.approx(2.44 * (2 / 3) / (2 / 3 + 1.44))
    assert lcs_length(list("abcbdab"), list("bdcaba")) == 4


def test_distinct_skips_the_last_ngram_as_the_reference_does():
    assert distinct([["a", "b", "a", "b"]], 1) == pytest.approx(2 / 3)  # a, b, a counted; the last b is not
    assert distinct([["a", "b", "a", "b"]], 2) == pytest.approx(2 / 2)  # (a b), (b a)
    assert distinct([["solo"]], 1) == 0.0


def test_one_reference_per_reply():
    with pytest.raises(ValueError, match="one reference per reply"):
        esconv_metrics(["a"], ["a", "b"])
