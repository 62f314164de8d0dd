"""ESConv's standard automatic metrics on replies, computed the way the ESConv authors' reference code
(thu-coai/Emotional-Support-Conversation, `codes_zcj/metric/myMetrics.py`) computes them:

- text is lower-cased and word-tokenised with NLTK's Treebank-style word tokenizer;
- BLEU-k is NLTK's *corpus* BLEU with uniform weights over 1..k-grams and smoothing method 3;
- ROUGE-L is the LCS F-measure with beta = 1.2 per reply, averaged over replies;
- Distinct-k counts the k-grams of all replies together, starting at every position i in
  range(len - k), as the reference does (so a reply's last k-gram is never counted);
- length is the mean number of tokens per reply;
- every score but length is reported ×100.

One deviation: the reference calls `nltk.word_tokenize`, which first splits sentences with the Punkt
model, a separate download that an offline machine lacks. Sentences are split here at `.`, `!` or `?`
followed by white space, then each is tokenised by the same word tokenizer that `word_tokenize` uses.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from statistics import fmean

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
ROUGE_BETA = 1.2


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens, as the reference's `nltk.word_tokenize(text.lower())` (sentence split aside)."""
    from nltk.tokenize import NLTKWordTokenizer

    tokenizer = NLTKWordTokenizer()
    return [token for sentence in SENTENCE_END.split(text.lower().strip()) for token in tokenizer.tokenize(sentence)]


def bleu(references: Sequence[list[str]], hypotheses: Sequence[list[str]], k: int) -> float:
    from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu

    weights = [1.0 / k] * k + [0.0] * (4 - k)
    try:
        return float(
            corpus_bleu(
                [[ref] for ref in references],
                list(hypotheses),
                weights=weights,
                smoothing_function=SmoothingFunction().method3,
            )
        )
    except ZeroDivisionError:  # no hypothesis tokens at all
        return 0.0


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence (dynamic programming, one row at a time)."""
    if len(a) < len(b):
        a, b = b, a
    previous = [0] * (len(b) + 1)
    for token in a:
        current = [0]
        for j, other in enumerate(b, 1):
            current.append(previous[j - 1] + 1 if token == other else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


def rouge_l(reference: Sequence[str], hypothesis: Sequence[str], beta: float = ROUGE_BETA) -> float:
    lcs = lcs_length(reference, hypothesis)
    precision, recall = lcs / max(len(hypothesis), 1e-10), lcs / max(len(reference), 1e-10)
    if precision == 0 or recall == 0:
        return 0.0
    return (1 + beta**2) * precision * recall / (recall + beta**2 * precision)


def distinct(hypotheses: Sequence[list[str]], k: int) -> float:
    seen, total = set(), 0
    for tokens in hypotheses:
        for i in range(len(tokens) - k):  # the reference's range: the last k-gram is not counted
            seen.add(tuple(tokens[i : i + k]))
            total += 1
    return len(seen) / total if total else 0.0


def esconv_metrics(references: Sequence[str], replies: Sequence[str]) -> dict[str, float]:
    """BLEU-2/4, ROUGE-L, Distinct-1/2 (all ×100) and mean length in tokens of `replies` against the gold
    `references` (one per reply)."""
    if len(references) != len(replies) or not replies:
        raise ValueError(f"need one reference per reply, got {len(references)} and {len(replies)}")
    refs = [tokenize(text) for text in references]
    hyps = [tokenize(text) for text in replies]
    return {
        "bleu_2": 100 * bleu(refs, hyps, 2),
        "bleu_4": 100 * bleu(refs, hyps, 4),
        "rouge_l": 100 * fmean(rouge_l(r, h) for r, h in zip(refs, hyps, strict=True)),
        "distinct_1": 100 * distinct(hyps, 1),
        "distinct_2": 100 * distinct(hyps, 2),
        "length": fmean(len(h) for h in hyps),
    }
