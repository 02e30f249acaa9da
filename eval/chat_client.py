"""A small async client for OpenAI-compatible ``/chat/completions`` endpoints (sglang, vLLM, commercial APIs).

Used by the OpenAI-compatible policy and by the judges. Safe defaults are named constants: every request has a
timeout, retryable failures (connection errors, timeouts, HTTP 429 and 5xx) are retried with exponential backoff
and jitter, and a semaphore bounds the number of requests in flight. The API key is read from the environment
variable named in the config when the client is built, never at import.

Example:
    >>> client = ChatClient(EndpointConfig(base_url="http://127.0.0.1:30000/v1", model="qwen"))
    >>> # completion = await client.complete([{"role": "user", "content": "hi"}], temperature=0.0)
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field

from opensearch_vl.errors import ConfigError, OpenSearchVLError

__all__ = ["EndpointConfig", "ChatClient", "ChatCompletion", "EndpointError", "DEFAULT_TIMEOUT_S"]

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_RETRIES = 4
DEFAULT_BACKOFF_S = 1.0
DEFAULT_MAX_CONCURRENCY = 64
_CONNECTIONS_PER_POOL = 8  # httpcore scans its whole pool per request; several small pools scale better
_RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
_OVERFLOW_MARKERS = (
    "context length",
    "context_length",
    "maximum context",
    "too many tokens",
    "prompt is too long",
    "longer than the model",
    "input is too long",
)


class EndpointConfig(BaseModel):
    """Where an OpenAI-compatible chat endpoint lives and how to talk to it."""

    model_config = ConfigDict(extra="forbid")

    base_url: str
    """Base URL including the API prefix, e.g. ``http://127.0.0.1:30000/v1``; ``/chat/completions`` is appended."""
    model: str = "default"
    """The ``model`` field of each request (sglang and vLLM accept the served model's name)."""
    api_key_env: str | None = "OPENAI_API_KEY"
    """Environment variable holding the API key; unset or empty means no ``Authorization`` header."""
    timeout_s: float = Field(DEFAULT_TIMEOUT_S, gt=0)
    """Wall-time limit of one HTTP request."""
    max_retries: int = Field(DEFAULT_MAX_RETRIES, ge=0)
    """Retries after the first attempt, for connection errors, timeouts, HTTP 429 and 5xx only."""
    backoff_s: float = Field(DEFAULT_BACKOFF_S, ge=0)
    """First backoff delay; doubled on every retry, with up to 25% random jitter."""
    max_concurrency: int = Field(DEFAULT_MAX_CONCURRENCY, ge=1)
    """Requests in flight at once, per client."""
    extra_body: dict[str, Any] = Field(default_factory=dict)
    """Merged into every request body (e.g. ``{"top_k": 20}`` for sglang/vLLM, ``chat_template_kwargs``)."""


@dataclass(frozen=True)
class ChatCompletion:
    """The useful part of one completion response."""

    text: str
    model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None


class EndpointError(OpenSearchVLError):
    """The endpoint gave no completion: after the retries, or at once for a non-retryable answer.

    ``status`` is the last HTTP status (``None`` for connection errors and timeouts); ``context_overflow`` is
    true when the server said the prompt is longer than the model's context.
    """

    def __init__(self, message: str, *, status: int | None = None, context_overflow: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.context_overflow = context_overflow


class ChatClient:
    """Async client of one endpoint. One instance may be used from several event loops (one at a time each).

    Args:
        config: the endpoint settings.
        transport: an httpx transport to use instead of the network (tests of callers at the HTTP seam).
    """

    def __init__(self, config: EndpointConfig, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        if not config.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"endpoint base_url {config.base_url!r} must start with http:// or https://")
        self.config = config
        self._url = config.base_url.rstrip("/") + "/chat/completions"
        key = os.environ.get(config.api_key_env, "") if config.api_key_env else ""
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._transport = transport
        # httpx pools and asyncio semaphores belong to one event loop; keep one set per loop.
        self._per_loop: dict[int, tuple[list[httpx.AsyncClient], asyncio.Semaphore]] = {}
        self._turn = 0

    def _state(self) -> tuple[httpx.AsyncClient, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        state = self._per_loop.get(id(loop))
        if state is None or state[0][0].is_closed:
            n_pools = -(-self.config.max_concurrency // _CONNECTIONS_PER_POOL)
            size = min(self.config.max_concurrency, _CONNECTIONS_PER_POOL)
            limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
            clients = [
                httpx.AsyncClient(
                    timeout=self.config.timeout_s,
                    limits=limits,
                    headers=self._headers,
                    transport=self._transport,
                )
                for _ in range(n_pools)
            ]
            state = (clients, asyncio.Semaphore(self.config.max_concurrency))
            self._per_loop = {k: v for k, v in self._per_loop.items() if not v[0][0].is_closed}
            self._per_loop[id(loop)] = state
        self._turn += 1
        return state[0][self._turn % len(state[0])], state[1]

    async def aclose(self) -> None:
        """Close the connection pools of the running loop."""
        state = self._per_loop.pop(id(asyncio.get_running_loop()), None)
        for client in state[0] if state is not None else []:
            await client.aclose()

    async def complete(self, messages: list[dict[str, Any]], **sampling: Any) -> ChatCompletion:
        """POST one chat request; ``sampling`` (temperature, top_p, max_tokens, …) goes into the body.

        Raises:
            EndpointError: no completion after the retries, or a non-retryable HTTP answer.
        """
        body = {
            "model": self.config.model,
            "messages": messages,
            **self.config.extra_body,
            **{k: v for k, v in sampling.items() if v is not None},
        }
        client, semaphore = self._state()
        attempts = self.config.max_retries + 1
        last: EndpointError | None = None
        for attempt in range(attempts):
            if attempt:
                delay = self.config.backoff_s * 2 ** (attempt - 1)
                await asyncio.sleep(delay * (1 + 0.25 * random.random()))
            try:
                async with semaphore:
                    response = await client.post(self._url, json=body)
            except httpx.TimeoutException as exc:
                last = EndpointError(
                    f"{self._url}: no answer within {self.config.timeout_s}s "
                    "(raise timeout_s or check the server load)"
                )
                last.__cause__ = exc
                continue
            except httpx.TransportError as exc:
                last = EndpointError(
                    f"{self._url}: connection failed ({exc.__class__.__name__}: {exc}); "
                    "is the server running?"
                )
                last.__cause__ = exc
                continue
            if response.status_code == 200:
                return _parse_completion(self._url, response)
            detail = response.text[:500]
            overflow = any(marker in detail.lower() for marker in _OVERFLOW_MARKERS)
            last = EndpointError(
                f"{self._url}: HTTP {response.status_code}: {detail}",
                status=response.status_code,
                context_overflow=overflow,
            )
            if overflow or response.status_code not in _RETRYABLE_STATUS:
                raise last
            logger.info(
                "retrying %s after HTTP %s (attempt %d/%d)",
                self._url,
                response.status_code,
                attempt + 1,
                attempts,
            )
        assert last is not None
        raise EndpointError(
            f"{last} (gave up after {attempts} attempts)", status=last.status
        ) from last.__cause__


def _parse_completion(url: str, response: httpx.Response) -> ChatCompletion:
    try:
        payload = response.json()
        choice = payload["choices"][0]
        message = choice.get("message") or {}
        text = message.get("content")
        if text is None:
            text = choice.get("text", "")
        if isinstance(text, list):  # some servers return content parts
            text = "".join(part.get("text", "") for part in text if isinstance(part, dict))
        usage = payload.get("usage") or {}
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise EndpointError(
            f"{url}: response is not an OpenAI chat completion: {response.text[:300]!r}",
            status=response.status_code,
        ) from exc
    return ChatCompletion(
        text=str(text),
        model=payload.get("model"),
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        finish_reason=choice.get("finish_reason"),
    )
