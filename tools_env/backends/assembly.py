"""Builds the shared pieces a tool factory needs from the config: HTTP client, cached services, indexes.

Example:
    >>> from opensearch_vl.tools_env.config import ToolEnvConfig
    >>> len(corpus_index(ToolEnvConfig())) > 0
    True
"""

from __future__ import annotations

from typing import Any

from opensearch_vl.tools_env.backends.gallery import GalleryIndex
from opensearch_vl.tools_env.backends.http import HttpClient
from opensearch_vl.tools_env.backends.search_index import CorpusIndex
from opensearch_vl.tools_env.config import ToolEnvConfig

__all__ = ["http_client", "cached", "corpus_index", "gallery_index"]


def http_client(config: ToolEnvConfig) -> HttpClient:
    """An HTTP client with the config's timeouts, retries and URL policy."""
    return HttpClient(config.http, allow_private=config.allow_private_urls)


def cached(service: Any, cache: Any, tool: str) -> Any:
    """``service`` behind ``cache`` (a ``ResultCache``), or ``service`` itself if ``None``."""
    return service if cache is None else cache.wrap(service, tool=tool)


def corpus_index(config: ToolEnvConfig) -> CorpusIndex:
    """The configured corpus index, or the bundled sample corpus indexed in memory."""
    path = config.search.corpus_index
    return CorpusIndex(path) if path else CorpusIndex.bundled()


def gallery_index(config: ToolEnvConfig) -> GalleryIndex:
    """The configured gallery index, or the bundled sample gallery."""
    path = config.image_search.gallery_index
    return GalleryIndex.load(path) if path else GalleryIndex.bundled()
