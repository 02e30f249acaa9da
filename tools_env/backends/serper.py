"""Serper.dev clients: Google web results (``POST /search``) and Google Lens (``POST /lens``).

Both are :class:`~opensearch_vl.tools_env.cache.Service` objects returning Serper's JSON unchanged, so the
cache records exactly what the API said; :func:`organic_results` and :func:`lens_matches` read it. The key is
read from the environment variable named in the config when the client is built, and never enters a request
dict (so it is not part of cache keys).

Example:
    >>> lens_matches({"organic": [{"title": "Eiffel Tower", "link": "https://e.org/t", "source": "e.org"}]})
    [{'title': 'Eiffel Tower', 'link': 'https://e.org/t', 'source': 'e.org'}]
"""

from __future__ import annotations

import os
from typing import Any

from opensearch_vl.tools_env.backends.http import HttpClient

from opensearch_vl.errors import PrerequisiteError

__all__ = ["SerperSearch", "SerperLens", "serper_api_key", "organic_results", "lens_matches"]


def serper_api_key(env_name: str, *, what: str = "search.backend is 'serper'") -> str:
    """The Serper key from ``$env_name``; a missing key is a prerequisite error naming the variable."""
    key = os.environ.get(env_name, "").strip()
    if not key:
        raise PrerequisiteError(
            f"{what} but ${env_name} is not set; export {env_name}=<key from serper.dev> "
            "or use the offline backend (search.backend: local)"
        )
    return key


class _SerperBase:
    endpoint = ""
    name = ""

    def __init__(
        self, http: HttpClient, *, base_url: str, api_key: str, env_name: str = "SERPER_API_KEY"
    ) -> None:
        self._http = http
        self._url = base_url.rstrip("/") + self.endpoint
        self._headers = {"X-API-KEY": api_key, "Content-Type": "application/json"}
        self._hint = f"check ${env_name}"

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        """POST ``request`` as the JSON body; returns Serper's response."""
        return self._http.request_json(
            "POST", self._url, service=self.name, json_body=request, headers=self._headers, hint=self._hint
        )


class SerperSearch(_SerperBase):
    """``POST {base}/search`` with ``{"q", "hl", "gl", "num"}``."""

    endpoint = "/search"
    name = "serper_search"


class SerperLens(_SerperBase):
    """``POST {base}/lens`` with ``{"url", "hl", "gl"}``; the image URL must be publicly reachable."""

    endpoint = "/lens"
    name = "serper_lens"


def organic_results(response: dict[str, Any]) -> list[dict[str, str]]:
    """``[{title, link, snippet}]`` from a ``/search`` response, answer box and knowledge graph first."""
    results = []
    box = response.get("answerBox") or {}
    if isinstance(box, dict) and (box.get("snippet") or box.get("answer")):
        results.append(
            {
                "title": str(box.get("title") or "Answer"),
                "link": str(box.get("link") or ""),
                "snippet": str(box.get("answer") or box.get("snippet")),
            }
        )
    graph = response.get("knowledgeGraph") or {}
    if isinstance(graph, dict) and graph.get("description"):
        results.append(
            {
                "title": str(graph.get("title") or "Knowledge graph"),
                "link": str(graph.get("descriptionLink") or graph.get("website") or ""),
                "snippet": str(graph["description"]),
            }
        )
    for item in response.get("organic") or []:
        if isinstance(item, dict) and item.get("link"):
            results.append(
                {
                    "title": str(item.get("title") or ""),
                    "link": str(item["link"]),
                    "snippet": str(item.get("snippet") or ""),
                }
            )
    return results


def lens_matches(response: dict[str, Any]) -> list[dict[str, str]]:
    """``[{title, link, source}]`` from a ``/lens`` response; reads ``organic``, ``visual_matches``/
    ``visualMatches`` and ``knowledgeGraph`` since the shape has varied."""
    matches = []
    graph = response.get("knowledgeGraph")
    items = graph if isinstance(graph, list) else ([graph] if isinstance(graph, dict) else [])
    for item in items:
        if item.get("title"):
            matches.append(
                {
                    "title": str(item["title"]),
                    "link": str(item.get("link") or item.get("website") or ""),
                    "source": str(item.get("source") or "knowledge graph"),
                }
            )
    for field in ("organic", "visual_matches", "visualMatches"):
        for item in response.get(field) or []:
            if isinstance(item, dict) and (item.get("title") or item.get("link")):
                matches.append(
                    {
                        "title": str(item.get("title") or ""),
                        "link": str(item.get("link") or ""),
                        "source": str(item.get("source") or ""),
                    }
                )
    return matches
