"""A :class:`~opensearch_vl.tools_env.policy.ChatPolicy` backed by any OpenAI-compatible chat endpoint.

Works with sglang, vLLM and commercial APIs. Images are sent inline as PNG data URIs
(``{"type": "image_url", "image_url": {"url": "data:image/png;base64,…"}}``) in the order of the message parts,
so the tool-response layout (images before the text) reaches the model unchanged. Timeouts, retries with
backoff and the concurrency limit are the :class:`~opensearch_vl.eval.chat_client.ChatClient`'s.

Example:
    >>> policy = OpenAICompatPolicy(EndpointConfig(base_url="http://127.0.0.1:30000/v1", model="opensearch-vl-8b"))
    >>> policy.sampling.temperature
    0.7
"""

from __future__ import annotations

import base64
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from opensearch_vl.eval.chat_client import ChatClient, EndpointConfig, EndpointError
from opensearch_vl.tools_env.images import png_bytes
from opensearch_vl.tools_env.policy import ChatMessage, ImagePart, PolicyError, PolicyOutput, TextPart
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SamplingConfig", "OpenAICompatPolicy", "to_openai_messages"]


class SamplingConfig(BaseModel):
    """Sampling settings of the policy. Defaults are the recipe's validation settings."""

    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(0.7, ge=0)
    """The recipe samples at 0.7 in training and validation."""
    top_p: float = Field(0.95, gt=0, le=1)
    """0.95 in validation (1.0 in training)."""
    top_k: int | None = None
    """Sent as an extra field (sglang/vLLM understand it; commercial APIs may reject it); ``None`` = not sent."""
    max_tokens: int = Field(4096, ge=1)
    """Completion tokens per turn (the RL rollout uses 4096)."""
    seed: int | None = None
    """Per-request seed, for servers that honour it."""
    stop: list[str] | None = None
    """Stop strings; the runner cuts hallucinated ``<tool_response>`` text anyway."""

    def request_fields(self) -> dict[str, Any]:
        """The body fields of one request."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


class DataUriCache:
    """PNG data URIs of images, encoded once per image object while it lives.

    Every turn re-sends the whole conversation, so without it each image is PNG-encoded again on every
    later turn of its episode. Entries go when their image is garbage-collected (the episode ended).
    """

    def __init__(self) -> None:
        self._uris: dict[int, tuple[weakref.ref, str]] = {}

    def __call__(self, part: ImagePart) -> str:
        key = id(part.image)
        hit = self._uris.get(key)
        if hit is not None and hit[0]() is part.image:
            return hit[1]
        uri = "data:image/png;base64," + base64.b64encode(png_bytes(part.image)).decode("ascii")
        self._uris[key] = (weakref.ref(part.image, lambda _, key=key: self._uris.pop(key, None)), uri)
        return uri


def _data_uri(part: ImagePart) -> str:
    return "data:image/png;base64," + base64.b64encode(png_bytes(part.image)).decode("ascii")


def to_openai_messages(
    messages: Sequence[ChatMessage], data_uri: Callable[[ImagePart], str] = _data_uri
) -> list[dict[str, Any]]:
    """Convert chat messages to the OpenAI wire format; text-only messages get a plain string content.

    Example:
        >>> to_openai_messages([ChatMessage("user", (TextPart("hi"),))])
        [{'role': 'user', 'content': 'hi'}]
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        if all(isinstance(p, TextPart) for p in message.content):
            out.append({"role": message.role, "content": message.text})
            continue
        parts: list[dict[str, Any]] = []
        for part in message.content:
            if isinstance(part, TextPart):
                if part.text:
                    parts.append({"type": "text", "text": part.text})
            else:
                parts.append({"type": "image_url", "image_url": {"url": data_uri(part)}})
        out.append({"role": message.role, "content": parts})
    return out


class OpenAICompatPolicy:
    """Chat policy over an OpenAI-compatible endpoint.

    Args:
        endpoint: URL, model name, timeout, retries, concurrency limit.
        sampling: temperature, top_p, max_tokens, … (defaults: the recipe's).
    """

    def __init__(self, endpoint: EndpointConfig, sampling: SamplingConfig | None = None) -> None:
        self.endpoint = endpoint
        self.sampling = sampling or SamplingConfig()
        self._client = ChatClient(endpoint)
        self._data_uris = DataUriCache()

    @property
    def meta(self) -> dict[str, Any]:
        """What the transcript records as its producing policy."""
        return {
            "kind": "openai_compat",
            "base_url": self.endpoint.base_url,
            "model": self.endpoint.model,
            "sampling": self.sampling.request_fields(),
        }

    async def __call__(self, messages: Sequence[ChatMessage]) -> PolicyOutput:
        """One assistant turn; endpoint failures become :class:`PolicyError` (context overflow flagged)."""
        try:
            completion = await self._client.complete(
                to_openai_messages(messages, self._data_uris), **self.sampling.request_fields()
            )
        except EndpointError as exc:
            raise PolicyError(str(exc), context_overflow=exc.context_overflow) from exc
        return PolicyOutput(
            text=completion.text,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            finish_reason=completion.finish_reason,
            info={"model": completion.model} if completion.model else {},
        )

    async def aclose(self) -> None:
        """Close the HTTP connections of the running loop."""
        await self._client.aclose()
