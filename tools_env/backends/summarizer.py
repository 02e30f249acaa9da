"""Summaries of pages and search results for a goal: an OpenAI-compatible chat server, or extractive.

:class:`ChatCompletions` is the cacheable service (``POST {base_url}/chat/completions``). :class:`Summarizer`
builds the prompt and falls back to :func:`extractive_summary` (the sentences sharing most words with the
goal, in page order) when no server is configured, and says which one it used.

Example:
    >>> extractive_summary("height of the tower", "It is red. The tower is 31 metres tall. A lamp.", 60)
    'The tower is 31 metres tall.'
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from opensearch_vl.tools_env.backends.http import HttpClient
from opensearch_vl.tools_env.config import SummarizerSettings

from opensearch_vl.errors import BackendError

__all__ = ["ChatCompletions", "Summarizer", "Summary", "extractive_summary"]

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n{2,}")
_WORD = re.compile(r"\w+")
_STOP = frozenset(
    "a an the of in on at to for and or is are was were be by with what which who how when where "
    "this that it its as from about".split()
)
PROMPT = (
    "You extract what a web page says about a goal.\n"
    "Goal: {goal}\n\nPage title: {title}\nPage content:\n{content}\n\n"
    "Write a focused summary of 2-4 sentences with the facts from the page that serve the goal. "
    "If the page says nothing relevant, say so in one sentence. Do not add facts that are not on the page."
)


class ChatCompletions:
    """``POST {base_url}/chat/completions`` with the request as the body; returns ``{"text": reply}``."""

    name = "chat_completions"

    def __init__(self, http: HttpClient, *, base_url: str, api_key: str | None = None) -> None:
        self._http = http
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send one chat request; returns the first choice's message text."""
        body = self._http.request_json(
            "POST",
            self._url,
            service="summarizer",
            json_body=request,
            headers=self._headers,
            hint="check the summarizer's API key variable",
        )
        try:
            text = body["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise BackendError(
                "upstream_http",
                f"summarizer: {self._url} answered without choices[0].message."
                "content; is it an OpenAI-compatible server?",
            ) from exc
        return {"text": str(text or "").strip()}


def _terms(text: str) -> set[str]:
    return {w for w in (m.lower() for m in _WORD.findall(text)) if w not in _STOP}


def extractive_summary(goal: str, text: str, max_chars: int) -> str:
    """The sentences of ``text`` sharing most words with ``goal``, in page order, within ``max_chars``."""
    sentences = [s.strip() for s in _SENTENCE.split(text) if s.strip()]
    goal_terms = _terms(goal)
    if not goal_terms or not sentences:
        return text[:max_chars]
    scored = sorted(range(len(sentences)), key=lambda i: (-len(goal_terms & _terms(sentences[i])), i))
    chosen, used = [], 0
    for i in scored:
        if len(goal_terms & _terms(sentences[i])) == 0 and chosen:
            break
        if used + len(sentences[i]) + 1 > max_chars and chosen:
            continue
        chosen.append(i)
        used += len(sentences[i]) + 1
    return " ".join(sentences[i] for i in sorted(chosen))[:max_chars]


@dataclass(frozen=True)
class Summary:
    """A summary and how it was made (``"llm:<model>"`` or ``"extractive"``)."""

    text: str
    method: str


class Summarizer:
    """Goal-conditioned page summaries through ``service`` (a possibly cached :class:`ChatCompletions`).

    Args:
        settings: model, sampling and input-size settings.
        service: the chat service, or ``None`` for extractive summaries.
    """

    def __init__(self, settings: SummarizerSettings, service: Any | None) -> None:
        self.settings = settings
        self.service = service

    @classmethod
    def from_settings(cls, settings: SummarizerSettings, http: HttpClient, wrap=lambda s: s) -> Summarizer:
        """Build from config; ``wrap`` puts the service behind the cache."""
        if not settings.base_url:
            return cls(settings, None)
        key = os.environ.get(settings.api_key_env, "").strip() or None
        return cls(settings, wrap(ChatCompletions(http, base_url=settings.base_url, api_key=key)))

    @property
    def enabled(self) -> bool:
        """Whether an LLM server is configured."""
        return self.service is not None

    def summarize(self, goal: str, title: str, text: str, *, fallback_chars: int) -> Summary:
        """Summarize ``text`` for ``goal`` with the server, or extractively within ``fallback_chars``."""
        if self.service is None:
            return Summary(extractive_summary(goal, text, fallback_chars), "extractive")
        prompt = PROMPT.format(goal=goal, title=title, content=text[: self.settings.max_input_chars])
        reply = self.service.call(
            {
                "model": self.settings.model,
                "messages": [{"role": "user", "content": prompt}],
                "max_tokens": self.settings.max_tokens,
                "temperature": self.settings.temperature,
            }
        )
        return Summary(reply["text"], f"llm:{self.settings.model}")
