"""The one HTTP boundary of the tool backends: timeouts, retries, and the mapping of failures to categories.

Two kinds of request go through :class:`HttpClient`:

* :meth:`HttpClient.request_json` calls a configured API (Serper, Jina, PP-StructureV3, a chat server). The
  operator chose that URL, so it is not address-checked (tests point it at 127.0.0.1).
* :meth:`HttpClient.fetch_public` fetches a URL the *model* chose (visit, image URLs). The URL is checked by
  :func:`~opensearch_vl.tools_env.backends.url_safety.check_url` before the first request and again for
  every redirect, which is followed by hand up to a cap; the body is read up to a size cap and its content
  type checked.

Failures map here, once: timeout → ``timeout``; 429 → ``rate_limited``; 5xx and connection errors →
``upstream_http`` (all three retried with backoff); 404/410 → ``not_found``; other 4xx → ``upstream_http``.

Example:
    >>> client = HttpClient(HttpSettings())
    >>> client.fetch_public("file:///etc/passwd")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    opensearch_vl.errors.ToolError: URL 'file:///etc/passwd' refused: scheme 'file' is not allowed; ...
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

import httpx
from opensearch_vl.tools_env.backends.retry import RetryPolicy, TransientBackendError, call_with_retry
from opensearch_vl.tools_env.backends.url_safety import check_url
from opensearch_vl.tools_env.config import HttpSettings

from opensearch_vl.errors import BackendError, ToolError

__all__ = ["HttpClient", "FetchedPage", "REDIRECT_CODES"]

log = logging.getLogger(__name__)
REDIRECT_CODES = (301, 302, 303, 307, 308)


@dataclass(frozen=True)
class FetchedPage:
    """A fetched body: the URL asked for, the URL it ended at, the hops taken, and the raw bytes."""

    url: str
    final_url: str
    status: int
    content_type: str
    body: bytes
    redirects: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """The body decoded with the charset the server declared (UTF-8 otherwise), bad bytes replaced."""
        charset = "utf-8"
        for part in self.content_type.split(";")[1:]:
            key, _, value = part.partition("=")
            if key.strip().lower() == "charset" and value.strip():
                charset = value.strip().strip('"')
        try:
            return self.body.decode(charset, errors="replace")
        except LookupError:
            return self.body.decode("utf-8", errors="replace")


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after", "")
    try:
        return float(value)
    except ValueError:
        return None


def raise_for_status(service: str, url: str, response: httpx.Response, hint: str = "") -> None:
    """Map an HTTP error status to a categorized error (transient ones are retryable)."""
    status = response.status_code
    if status < 400:
        return
    detail = response.text[:200].strip().replace("\n", " ") if response.content else ""
    message = f"{service}: HTTP {status} from {url}" + (f": {detail}" if detail else "")
    if status == 429:
        raise TransientBackendError(
            "rate_limited", message + "; slow down or raise the plan's rate limit", _retry_after(response)
        )
    if status >= 500:
        raise TransientBackendError("upstream_http", message, _retry_after(response))
    if status in (404, 410):
        raise BackendError("not_found", message)
    if status in (401, 403) and hint:
        message += f"; {hint}"
    raise BackendError("upstream_http", message)


class HttpClient:
    """Thread-safe HTTP client with the configured timeouts and retry policy.

    Args:
        settings: timeouts, attempts, backoff.
        allow_private: let :meth:`fetch_public` reach loopback/private addresses (tests only).
    """

    def __init__(self, settings: HttpSettings, *, allow_private: bool = False) -> None:
        self.settings = settings
        self.allow_private = allow_private
        self.retry = RetryPolicy(settings.max_attempts, settings.backoff_base_s, settings.backoff_max_s)
        timeout = httpx.Timeout(settings.read_timeout_s, connect=settings.connect_timeout_s)
        headers = {"User-Agent": settings.user_agent}
        # API calls honour proxy settings; model-chosen URLs never use a proxy (it would defeat the checks).
        self._api = httpx.Client(timeout=timeout, headers=headers, follow_redirects=True)
        self._public = httpx.Client(timeout=timeout, headers=headers, follow_redirects=False, trust_env=False)

    def close(self) -> None:
        """Close the connection pools."""
        self._api.close()
        self._public.close()

    def request_json(
        self,
        method: str,
        url: str,
        *,
        service: str,
        json_body: Any = None,
        headers: dict[str, str] | None = None,
        hint: str = "",
    ) -> Any:
        """Send a request to an API and return its decoded JSON body (retrying transient failures).

        ``hint`` is appended to 401/403 errors (e.g. "check $SERPER_API_KEY").
        """

        def attempt() -> Any:
            with self._errors_mapped(service, url):
                response = self._api.request(method, url, json=json_body, headers=headers)
            raise_for_status(service, url, response, hint)
            try:
                return response.json()
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise BackendError(
                    "upstream_http",
                    f"{service}: {url} answered with non-JSON content "
                    f"({response.headers.get('content-type', '?')})",
                ) from exc

        return call_with_retry(attempt, self.retry, what=f"{service} {url}")

    def request_text(
        self, url: str, *, service: str, headers: dict[str, str] | None = None, hint: str = ""
    ) -> str:
        """GET an API URL and return the body as text (retrying transient failures)."""

        def attempt() -> str:
            with self._errors_mapped(service, url):
                response = self._api.get(url, headers=headers)
            raise_for_status(service, url, response, hint)
            return response.text

        return call_with_retry(attempt, self.retry, what=f"{service} {url}")

    def fetch_public(
        self,
        url: str,
        *,
        max_bytes: int = 5_000_000,
        max_redirects: int = 5,
        allowed_types: Sequence[str] = (),
        service: str = "fetch",
    ) -> FetchedPage:
        """Fetch a model-chosen URL under the URL policy, following redirects by hand and re-checking each."""
        return call_with_retry(
            lambda: self._fetch_once(url, max_bytes, max_redirects, tuple(allowed_types), service),
            self.retry,
            what=f"{service} {url}",
        )

    def _fetch_once(
        self, url: str, max_bytes: int, max_redirects: int, allowed: tuple[str, ...], service: str
    ) -> FetchedPage:
        current, hops = url, []
        while True:
            check_url(current, allow_private=self.allow_private)
            with self._errors_mapped(service, current):
                with self._public.stream("GET", current) as response:
                    if response.status_code in REDIRECT_CODES and "location" in response.headers:
                        if len(hops) >= max_redirects:
                            raise BackendError(
                                "upstream_http",
                                f"{service}: {url} redirected more than "
                                f"{max_redirects} times (last hop {current})",
                            )
                        hops.append(current)
                        current = urljoin(current, response.headers["location"])
                        continue
                    if response.status_code >= 400:
                        response.read()
                    raise_for_status(service, current, response)
                    content_type = response.headers.get("content-type", "application/octet-stream")
                    mime = content_type.split(";")[0].strip().lower()
                    if allowed and mime not in allowed:
                        raise BackendError(
                            "upstream_http",
                            f"{service}: {current} has content type {mime!r}, "
                            f"which cannot be read as text; accepted: {', '.join(allowed)}",
                        )
                    declared = response.headers.get("content-length", "")
                    if declared.isdigit() and int(declared) > max_bytes:
                        raise BackendError(
                            "upstream_http",
                            f"{service}: {current} is {declared} bytes, over the "
                            f"{max_bytes}-byte cap (visit.max_page_bytes)",
                        )
                    body = bytearray()
                    for chunk in response.iter_bytes():
                        body += chunk
                        if len(body) > max_bytes:
                            raise BackendError(
                                "upstream_http",
                                f"{service}: {current} is larger than the "
                                f"{max_bytes}-byte cap (visit.max_page_bytes)",
                            )
                    return FetchedPage(
                        url, current, response.status_code, content_type, bytes(body), tuple(hops)
                    )

    class _errors_mapped:
        """Context manager mapping httpx transport exceptions to categorized backend errors."""

        def __init__(self, service: str, url: str) -> None:
            self.service, self.url = service, url

        def __enter__(self) -> None:
            return None

        def __exit__(self, exc_type, exc, tb) -> bool:
            if exc is None or isinstance(exc, ToolError):
                return False
            if isinstance(exc, httpx.TimeoutException):
                raise TransientBackendError(
                    "timeout", f"{self.service}: {self.url} timed out ({exc.__class__.__name__})"
                ) from exc
            if isinstance(exc, httpx.TransportError):
                raise TransientBackendError(
                    "upstream_http",
                    f"{self.service}: cannot reach {self.url} ({exc.__class__.__name__}: {exc})",
                ) from exc
            if isinstance(exc, httpx.HTTPError):
                raise BackendError("upstream_http", f"{self.service}: {self.url}: {exc}") from exc
            return False
