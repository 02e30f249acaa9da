"""Page readers for ``visit``: direct HTTP fetch with main-text extraction, and Jina Reader.

Both are cacheable services taking ``{"url": …}`` and returning ``{"url", "final_url", "title", "text"}``.
The URL is checked against the URL policy before anything is sent (Jina fetches on its side, but a model
still may not point it at metadata endpoints or non-http schemes). Pages of the local corpus are served
by :class:`~opensearch_vl.tools_env.backends.search_index.CorpusIndex` directly, without these classes.

Example:
    >>> page = "<html><head><title>T</title></head><body><p>Hello there.</p></body></html>"
    >>> extract_main_text(page, "text/html")
    ('T', 'Hello there.')
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

from opensearch_vl.tools_env.backends.http import HttpClient
from opensearch_vl.tools_env.backends.url_safety import check_url
from opensearch_vl.tools_env.config import VisitSettings

from opensearch_vl.errors import BackendError

__all__ = ["HttpPageReader", "JinaReader", "extract_main_text"]

_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)
_TAGS = re.compile(r"<[^>]+>")


def extract_main_text(body: str, content_type: str) -> tuple[str, str]:
    """``(title, text)`` of a page: trafilatura's main content for HTML, the body itself otherwise."""
    mime = content_type.split(";")[0].strip().lower()
    if mime not in ("text/html", "application/xhtml+xml"):
        return "", body.strip()
    import trafilatura

    match = _TITLE.search(body)
    title = re.sub(r"\s+", " ", _TAGS.sub("", match.group(1))).strip() if match else ""
    text = trafilatura.extract(
        body, output_format="markdown", include_tables=True, include_comments=False, favor_recall=True
    )
    if not text:
        # Very short pages have no "main content" for trafilatura; fall back to the visible text.
        visible = re.sub(r"(?is)<(script|style|nav|footer|header)[^>]*>.*?</\1>", " ", body)
        text = re.sub(r"\s+", " ", _TAGS.sub(" ", visible)).strip()
    return title, text


class HttpPageReader:
    """Fetch the page directly (URL policy, redirect and size caps, content type) and extract its text."""

    name = "http_fetch"

    def __init__(self, http: HttpClient, settings: VisitSettings) -> None:
        self._http = http
        self._settings = settings

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        """Fetch ``request["url"]``; returns ``{url, final_url, title, text, redirects}``."""
        page = self._http.fetch_public(
            request["url"],
            max_bytes=self._settings.max_page_bytes,
            max_redirects=self._settings.max_redirects,
            allowed_types=self._settings.allowed_content_types,
            service="visit",
        )
        title, text = extract_main_text(page.text, page.content_type)
        if not text:
            raise BackendError("not_found", f"visit: {page.final_url} has no readable text")
        return {
            "url": page.url,
            "final_url": page.final_url,
            "title": title,
            "text": text,
            "redirects": list(page.redirects),
        }


class JinaReader:
    """``GET {jina_base_url}/{url}`` with ``Accept: application/json``; reads ``data.{title, content}``."""

    name = "jina_reader"

    def __init__(self, http: HttpClient, *, base_url: str, api_key: str | None, allow_private: bool) -> None:
        self._http = http
        self._base = base_url.rstrip("/")
        self._headers = {"Accept": "application/json", "X-Return-Format": "markdown"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._allow_private = allow_private

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        """Read ``request["url"]`` through Jina; returns ``{url, final_url, title, text}``."""
        url = check_url(request["url"], allow_private=self._allow_private, resolve=False).url
        raw = self._http.request_text(
            f"{self._base}/{quote(url, safe=':/?&=%#@+,;~')}",
            service="jina",
            headers=self._headers,
            hint="check $JINA_API_KEY",
        )
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            body = None
        if isinstance(body, dict) and isinstance(body.get("data"), dict):
            data = body["data"]
            title, text, final = (
                str(data.get("title") or ""),
                str(data.get("content") or ""),
                data.get("url") or url,
            )
        else:
            title, text, final = _parse_markdown_reply(raw, url)
        if not text.strip():
            raise BackendError("not_found", f"visit: Jina Reader returned no content for {url}")
        return {"url": url, "final_url": str(final), "title": title, "text": text.strip()}


def _parse_markdown_reply(raw: str, url: str) -> tuple[str, str, str]:
    title, final = "", url
    header, sep, content = raw.partition("Markdown Content:")
    if not sep:
        return "", raw, url
    for line in header.splitlines():
        if line.startswith("Title:"):
            title = line[len("Title:") :].strip()
        elif line.startswith("URL Source:"):
            final = line[len("URL Source:") :].strip()
    return title, content, final
