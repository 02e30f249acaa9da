"""Rule-based answer matching: the judge's fallback and the cheap deterministic scorer for CI.

Normalization follows the SQuAD convention (lower case, no punctuation, no articles, collapsed whitespace)
plus Unicode NFKC and thousands separators in numbers. A response matches when its extracted final answer
equals a reference or an alias, or when a reference appears in it as a whole-word sequence (the VDR-Bench
question is "does the report contain the answer").

Example:
    >>> rule_match("<think>...</think><response>It is the Eiffel Tower.</response>", ["Eiffel Tower"])
    True
    >>> rule_match("Paris", ["London", "the City of London"])
    False
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Sequence

__all__ = ["normalize_answer", "extract_final_answer", "rule_match"]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_PUNCT = str.maketrans({c: " " for c in string.punctuation + "“”‘’«»–—…·"})
_THINK = re.compile(r"<think>.*?</think>", re.S)
_TAG = {name: re.compile(rf"<{name}>(.*?)</{name}>", re.S) for name in ("answer", "response")}
_BOXED = re.compile(r"\\?boxed\{")


def normalize_answer(text: str) -> str:
    """Lower-case, NFKC, drop punctuation and articles, collapse whitespace.

    Example:
        >>> normalize_answer("  The Eiffel-Tower, 1,000 m! ")
        'eiffel tower 1000 m'
    """
    text = unicodedata.normalize("NFKC", text).lower()
    text = _THOUSANDS.sub("", text)
    text = text.translate(_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _boxed(text: str) -> str | None:
    matches = list(_BOXED.finditer(text))
    if not matches:
        return None
    start = matches[-1].end()
    depth = 1
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start:i]
    return None


def extract_final_answer(text: str) -> str:
    """The answer inside a model's final turn: ``\\boxed{}`` > ``<answer>`` > ``<response>`` > the text after
    ``</think>``; the whole text when none is present.

    Example:
        >>> extract_final_answer("<think>hmm</think><response>So \\\\boxed{42}.</response>")
        '42'
    """
    body = _THINK.sub("", text)
    if "</think>" in body:
        body = body.rsplit("</think>", 1)[1]
    boxed = _boxed(body)
    if boxed is not None:
        return boxed.strip()
    for name in ("answer", "response"):
        found = _TAG[name].findall(body)
        if found:
            return found[-1].strip()
    return body.strip()


def rule_match(response: str, answers: Sequence[str]) -> bool:
    """True iff the response's final answer equals, or contains as whole words, a reference or an alias.

    ``answers`` is the reference first, then aliases; empty references are ignored. A response with no text
    never matches.

    Example:
        >>> rule_match("The answer is 1,024 pixels", ["1024 pixels"])
        True
    """
    candidate = normalize_answer(extract_final_answer(response))
    if not candidate:
        return False
    padded = f" {candidate} "
    for answer in answers:
        reference = normalize_answer(str(answer))
        if reference and (reference == candidate or f" {reference} " in padded):
            return True
    return False
