"""The chat-policy interface the episode runner drives: messages with images in, text out.

Any model backend (an OpenAI-compatible server, a local transformers model, rLLM's rollout engine, verl's
server manager, a scripted test driver) is wrapped as a :class:`ChatPolicy`. Messages carry images as
:class:`ImagePart` objects (episode id plus decoded pixels) so each backend encodes them its own way
(data URI, processor input, sglang image list).

Example:
    >>> class Always:
    ...     async def __call__(self, messages):
    ...         return PolicyOutput(text="<think>easy</think><response>42</response>")
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, Union

from PIL import Image

__all__ = ["TextPart", "ImagePart", "ChatMessage", "PolicyOutput", "ChatPolicy", "PolicyError"]


@dataclass(frozen=True)
class TextPart:
    """A run of text inside a message."""

    text: str


@dataclass(frozen=True)
class ImagePart:
    """An image inside a message: its episode id and decoded RGB pixels."""

    image_id: str
    image: Image.Image


@dataclass(frozen=True)
class ChatMessage:
    """One chat message. Tool observations are ``user`` messages whose text is wrapped in ``<tool_response>``."""

    role: Literal["system", "user", "assistant"]
    content: tuple[Union[TextPart, ImagePart], ...]

    @property
    def text(self) -> str:
        """The concatenated text parts."""
        return "".join(p.text for p in self.content if isinstance(p, TextPart))

    @property
    def images(self) -> list[Image.Image]:
        """The images of this message, in order."""
        return [p.image for p in self.content if isinstance(p, ImagePart)]


@dataclass
class PolicyOutput:
    """What the policy returned for one turn."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    info: dict[str, Any] = field(default_factory=dict)
    """Backend extras: token ids and log-probs (RL), model name, request id. Not shown to the model."""


class ChatPolicy(Protocol):
    """An async callable producing the next assistant turn. Raise :class:`PolicyError` when it cannot."""

    async def __call__(self, messages: Sequence[ChatMessage]) -> PolicyOutput: ...


class PolicyError(Exception):
    """The policy could not produce a turn (server down, context too long). Ends the episode, never the batch.

    ``context_overflow=True`` marks a prompt that exceeded the model's context window.
    """

    def __init__(self, message: str, *, context_overflow: bool = False) -> None:
        super().__init__(message)
        self.context_overflow = context_overflow
