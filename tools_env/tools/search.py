"""text_search and web_search: the local bm25 index (offline default) or Google results through Serper.

text_search returns passages ``[Passage i] Title / URL / Summary``; web_search returns a numbered list of
links with snippets. An empty result list is an ordinary observation, not an error.

Example:
    >>> from opensearch_vl.tools_env.config import ToolEnvConfig
    >>> engine = SearchEngine(ToolEnvConfig(), None, tool="text_search")
    >>> engine.search("Tallow Peak first ascent", 1)[0]["title"]
    'Tallow Peak'
"""

from __future__ import annotations

from typing import Any

from opensearch_vl.tools_env.backends.assembly import cached, corpus_index, http_client
from opensearch_vl.tools_env.backends.serper import SerperSearch, organic_results, serper_api_key
from opensearch_vl.tools_env.backends.summarizer import Summarizer
from opensearch_vl.tools_env.config import ToolEnvConfig
from opensearch_vl.tools_env.images import ImageStore
from opensearch_vl.tools_env.tool import FunctionTool, ToolResult, ToolSpec, register_tool

from opensearch_vl.errors import ToolError

__all__ = ["TEXT_SEARCH", "WEB_SEARCH", "SearchEngine"]

TEXT_SEARCH = ToolSpec(
    name="text_search",
    description="Search the web for a text query; returns the top passages with title, URL and a summary. "
    "Use it to verify facts and to look up entities found with image_search.",
    parameters={
        "type": "object",
        "properties": {
            "q": {"type": "string", "description": 'The search query ("query" is accepted too).'},
            "top_k": {
                "type": "integer",
                "minimum": 1,
                "maximum": 20,
                "default": 5,
                "description": "Number of passages to return.",
            },
            "hl": {"type": "string", "default": "en", "description": 'Interface language code, e.g. "en".'},
        },
        "required": [],
    },
)

WEB_SEARCH = ToolSpec(
    name="web_search",
    description="Search the web; returns a numbered list of result links with their snippets.",
    parameters={
        "type": "object",
        "properties": {
            "q": {"type": "string", "description": "The search query."},
            "hl": {"type": "string", "default": "en", "description": "Interface language code."},
        },
        "required": ["q"],
    },
)


class SearchEngine:
    """The configured search backend behind one method: ``search(q, k, hl) -> [{title, link, snippet}]``."""

    def __init__(self, config: ToolEnvConfig, cache: Any, *, tool: str) -> None:
        self.settings = config.search
        self.backend = self.settings.backend
        self.http = http_client(config)
        if self.backend == "serper":
            key = serper_api_key(self.settings.serper_api_key_env)
            self._serper = cached(
                SerperSearch(
                    self.http,
                    base_url=self.settings.serper_base_url,
                    api_key=key,
                    env_name=self.settings.serper_api_key_env,
                ),
                cache,
                tool,
            )
            self._index = None
        else:
            self._serper = None
            self._index = corpus_index(config)

    def search(self, query: str, top_k: int, hl: str = "en") -> list[dict[str, str]]:
        """Ranked results (at most ``top_k``, clamped to ``search.max_top_k``)."""
        top_k = max(1, min(int(top_k), self.settings.max_top_k))
        if self._serper is not None:
            response = self._serper.call({"q": query, "hl": hl, "gl": self.settings.gl, "num": top_k})
            return organic_results(response)[:top_k]
        tokens = max(8, self.settings.snippet_chars // 6)
        return [
            {"title": h.title, "link": h.url, "snippet": h.snippet}
            for h in self._index.search(query, top_k, snippet_tokens=tokens)
        ]

    def page_text(self, url: str) -> str | None:
        """Full text of a result page when the local corpus has it (for summaries)."""
        page = self._index.page(url) if self._index is not None else None
        return page.text if page else None


def _query(arguments: dict[str, Any], tool: str) -> str:
    query = arguments.get("q") or arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ToolError(
            "bad_arguments", f'{tool}: give a non-empty query in "q", e.g. {{"q": "Eiffel Tower height"}}'
        )
    return query.strip()


class TextSearchTool:
    """text_search: passages, optionally summarized for the query by the summarizer."""

    def __init__(self, config: ToolEnvConfig, cache: Any) -> None:
        self.engine = SearchEngine(config, cache, tool="text_search")
        self.default_top_k = config.search.default_top_k
        self.summarizer = Summarizer.from_settings(
            config.summarizer, self.engine.http, lambda s: cached(s, cache, "text_search")
        )
        self.summarize = config.search.summarize and self.summarizer.enabled

    def __call__(self, arguments: dict[str, Any], store: ImageStore) -> ToolResult:
        query = _query(arguments, "text_search")
        top_k = int(arguments.get("top_k") or self.default_top_k)
        hl = str(arguments.get("hl") or arguments.get("lang") or "en")
        results = self.engine.search(query, top_k, hl)
        if not results:
            return ToolResult(
                text=f"No results for {query!r}.", info={"backend": self.engine.backend, "results": 0}
            )
        blocks = []
        for i, result in enumerate(results, 1):
            summary = result["snippet"]
            if self.summarize:
                text = self.engine.page_text(result["link"]) or result["snippet"]
                summary = self.summarizer.summarize(query, result["title"], text, fallback_chars=600).text
            blocks.append(
                f"[Passage {i}]\nTitle: {result['title']}\nURL: {result['link']}\nSummary:\n{summary}"
            )
        return ToolResult(
            text="\n\n".join(blocks),
            info={"backend": self.engine.backend, "results": len(results), "summarized": self.summarize},
        )


class WebSearchTool:
    """web_search: up to 10 links with snippets."""

    def __init__(self, config: ToolEnvConfig, cache: Any) -> None:
        self.engine = SearchEngine(config, cache, tool="web_search")

    def __call__(self, arguments: dict[str, Any], store: ImageStore) -> ToolResult:
        query = _query(arguments, "web_search")
        results = self.engine.search(query, 10, str(arguments.get("hl") or "en"))
        lines = [f"Search for {query!r} returned {len(results)} results:"]
        for i, result in enumerate(results, 1):
            lines.append(f"{i}. [{result['title']}]({result['link']})\n   {result['snippet']}")
        return ToolResult(
            text="\n".join(lines), info={"backend": self.engine.backend, "results": len(results)}
        )


@register_tool("text_search")
def make_text_search(config: ToolEnvConfig, cache: Any = None) -> FunctionTool:
    """The text_search tool with the configured backend."""
    return FunctionTool(TEXT_SEARCH, TextSearchTool(config, cache))


@register_tool("web_search")
def make_web_search(config: ToolEnvConfig, cache: Any = None) -> FunctionTool:
    """The web_search tool with the configured backend."""
    return FunctionTool(WEB_SEARCH, WebSearchTool(config, cache))
