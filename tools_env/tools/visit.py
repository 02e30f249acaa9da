"""visit: read a web page and report what it says about a goal.

Pages of the local corpus are answered from the index without network (always with ``visit.backend:
local``; first, with ``http``/``jina`` when ``serve_corpus_pages`` is on). Other pages go through the
configured reader (cached). The page is then summarized for the goal by the summarizer when one is
configured; otherwise the text is shown whole if short, or as its most goal-relevant sentences.

Example:
    >>> from opensearch_vl.tools_env.config import ToolEnvConfig
    >>> tool = VisitTool(ToolEnvConfig(), None)
    >>> url = "https://en.example.org/wiki/Kestrel_Point_Lighthouse"
    >>> "1871" in tool({"url": url, "goal": "year first lit"}, None).text
    True
"""

from __future__ import annotations

import os
from typing import Any

from opensearch_vl.tools_env.backends.assembly import cached, corpus_index, http_client
from opensearch_vl.tools_env.backends.pages import HttpPageReader, JinaReader
from opensearch_vl.tools_env.backends.summarizer import Summarizer
from opensearch_vl.tools_env.config import ToolEnvConfig
from opensearch_vl.tools_env.images import ImageStore
from opensearch_vl.tools_env.tool import FunctionTool, ToolResult, ToolSpec, register_tool

from opensearch_vl.errors import ToolError

__all__ = ["VISIT", "VisitTool"]

VISIT = ToolSpec(
    name="visit",
    description="Open a web page (http or https URL) and return the information on it that serves your goal.",
    parameters={
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "Absolute http(s) URL of the page."},
            "goal": {"type": "string", "description": "What you want to learn from the page."},
        },
        "required": ["url"],
    },
)


class VisitTool:
    """Corpus pages offline, other pages through the configured reader, then a goal-conditioned summary."""

    def __init__(self, config: ToolEnvConfig, cache: Any) -> None:
        settings = config.visit
        self.settings = settings
        self.corpus = (
            corpus_index(config) if settings.backend == "local" or settings.serve_corpus_pages else None
        )
        self.reader = None
        http = http_client(config)
        if settings.backend == "http":
            self.reader = cached(HttpPageReader(http, settings), cache, "visit")
        elif settings.backend == "jina":
            key = os.environ.get(settings.jina_api_key_env, "").strip() or None
            self.reader = cached(
                JinaReader(
                    http,
                    base_url=settings.jina_base_url,
                    api_key=key,
                    allow_private=config.allow_private_urls,
                ),
                cache,
                "visit",
            )
        self.summarizer = Summarizer.from_settings(
            config.summarizer, http, lambda s: cached(s, cache, "visit")
        )

    def _read(self, url: str) -> tuple[dict[str, Any], str]:
        page = self.corpus.page(url) if self.corpus is not None else None
        if page is not None:
            return {"url": url, "final_url": page.url, "title": page.title, "text": page.text}, "local_corpus"
        if self.reader is None:
            raise ToolError(
                "not_found",
                f"visit: {url} is not in the local corpus (the offline visit backend "
                "serves only corpus pages); search first and visit a result URL, or set "
                "visit.backend: http or jina to read the web",
            )
        return self.reader.call({"url": url}), self.reader.name

    def __call__(self, arguments: dict[str, Any], store: ImageStore | None) -> ToolResult:
        url = str(arguments.get("url") or "").strip()
        if not url:
            raise ToolError(
                "bad_arguments", 'visit: give the page in "url", e.g. {"url": "https://…", "goal": "…"}'
            )
        goal = str(arguments.get("goal") or "").strip() or "the main content of the page"
        page, source = self._read(url)
        text = page["text"]
        if self.summarizer.enabled:
            summary = self.summarizer.summarize(
                goal, page["title"], text, fallback_chars=self.settings.max_page_chars
            )
            body, method = summary.text, summary.method
        elif len(text) <= self.settings.max_page_chars:
            body, method = text, "full text"
        else:
            summary = self.summarizer.summarize(
                goal, page["title"], text, fallback_chars=self.settings.max_page_chars
            )
            body, method = summary.text, "extractive (most goal-relevant sentences)"
        lines = [
            f"Page: {page['title'] or '(untitled)'}",
            f"URL: {page['final_url']}",
            f"Goal: {goal}",
            f"Content ({method}):",
            body,
        ]
        return ToolResult(
            text="\n".join(lines),
            info={
                "source": source,
                "final_url": page["final_url"],
                "method": method,
                "page_chars": len(text),
            },
        )


@register_tool("visit")
def make_visit(config: ToolEnvConfig, cache: Any = None) -> FunctionTool:
    """The visit tool with the configured reader."""
    return FunctionTool(VISIT, VisitTool(config, cache))
