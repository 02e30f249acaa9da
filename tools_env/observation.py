"""How the environment talks back to the model: observation text, error markers and chat messages.

**Observation turn.** A tool result is a ``user`` message whose text is
``<tool_response>\\n{images}{text}\\n</tool_response>``: the images the tool produced come *before* the text,
inside the tags. This is the format :mod:`opensearch_vl.sft.observation_format` documents for SFT (Qwen3-VL
renders an ``[image…, text]`` content list in that order), so a transcript becomes an SFT row without
moving anything. As :class:`~opensearch_vl.tools_env.policy.ChatMessage` parts::

    TextPart("<tool_response>\\n"), ImagePart(img_3), …, TextPart(text + "\\n</tool_response>")

**Error marker.** A failed call's observation starts with ``[tool error: <category>] ``, then the message,
where category is one of :data:`opensearch_vl.errors.ERROR_CATEGORIES`, e.g.
``[tool error: not_found] image reference 'img_9' not found; available: img_1, img_2``. RL and eval code
recognise error observations with :func:`parse_error` (or :data:`ERROR_MARKER_PATTERN`); the step's
``error`` flag is the authoritative record, the marker is what the model sees.

**Truncation.** Text longer than the configured limit keeps its first ``max_chars`` characters and ends with
``\\n[output truncated: N characters dropped]``.

**Task turn.** The first ``user`` message holds the task images (``img_1``…) and then the question text.

Example:
    >>> format_error("timeout", "visit: no answer after 30 s")
    '[tool error: timeout] visit: no answer after 30 s'
    >>> parse_error('[tool error: timeout] visit: no answer after 30 s')
    ('timeout', 'visit: no answer after 30 s')
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from opensearch_vl.tools_env.policy import ChatMessage, ImagePart, TextPart
from PIL import Image

if TYPE_CHECKING:
    from opensearch_vl.tools_env.transcript import Action, Transcript

__all__ = [
    "TOOL_RESPONSE_OPEN",
    "TOOL_RESPONSE_CLOSE",
    "ERROR_MARKER_PATTERN",
    "FORMAT_HELP",
    "format_error",
    "parse_error",
    "truncate_text",
    "invalid_turn_observation",
    "system_message",
    "task_message",
    "assistant_message",
    "observation_message",
    "message_chars",
    "transcript_messages",
]

TOOL_RESPONSE_OPEN = "<tool_response>\n"
TOOL_RESPONSE_CLOSE = "\n</tool_response>"
ERROR_MARKER_PATTERN = re.compile(r"^\[tool error: ([a-z_]+)\] ")
"""Matches the start of an error observation; group 1 is the category."""
FORMAT_HELP = (
    "Expected format: <think>your reasoning</think> followed by exactly one action, either "
    '<tool_call>{"name": "<tool name>", "arguments": {<JSON object>}}</tool_call> '
    "or <response>your final answer</response>."
)
"""Appended to the observation of a turn that could not be parsed."""
_TRUNCATION = "\n[output truncated: {dropped} characters dropped]"


def format_error(category: str, message: str) -> str:
    """The observation text for a failed call: the stable marker, then the message.

    Example:
        >>> format_error("bad_arguments", "crop: width must be > 0")
        '[tool error: bad_arguments] crop: width must be > 0'
    """
    return f"[tool error: {category}] {message}"


def parse_error(text: str) -> tuple[str, str] | None:
    """``(category, message)`` if ``text`` is an error observation, else ``None``.

    Example:
        >>> parse_error("Image cropped. New image: img_2 (10x10)") is None
        True
    """
    match = ERROR_MARKER_PATTERN.match(text)
    if match is None:
        return None
    return match.group(1), text[match.end() :]


def truncate_text(text: str, max_chars: int) -> tuple[str, int]:
    """Cut ``text`` to ``max_chars`` characters plus a marker; returns the text and how many were dropped.

    Example:
        >>> truncate_text("abcdef", 4)
        ('abcd\\n[output truncated: 2 characters dropped]', 2)
    """
    if max_chars < 0:
        raise ValueError(f"max_chars must be >= 0, got {max_chars}")
    if len(text) <= max_chars:
        return text, 0
    dropped = len(text) - max_chars
    return text[:max_chars] + _TRUNCATION.format(dropped=dropped), dropped


def invalid_turn_observation(action: Action) -> str:
    """The error observation for a turn the parser rejected: marker, reason, detail and the expected format.

    Schema violations use the ``bad_arguments`` category, every other reason ``invalid_call``.

    Example:
        >>> from opensearch_vl.tools_env.parser import parse_turn
        >>> invalid_turn_observation(parse_turn("hmm")).startswith("[tool error: invalid_call] no_action:")
        True
    """
    category = "bad_arguments" if action.invalid_reason == "schema_violation" else "invalid_call"
    detail = action.invalid_detail or ""
    return format_error(category, f"{action.invalid_reason}: {detail}. {FORMAT_HELP}")


def system_message(prompt: str) -> ChatMessage:
    """The system turn.

    Example:
        >>> system_message("You are an agent.").role
        'system'
    """
    return ChatMessage("system", (TextPart(prompt),))


def task_message(question: str, images: Sequence[ImagePart] = ()) -> ChatMessage:
    """The task turn: the task images in order (``img_1``…), then the question.

    Example:
        >>> task_message("What is this?").text
        'What is this?'
    """
    return ChatMessage("user", (*images, TextPart(question)))


def assistant_message(text: str) -> ChatMessage:
    """An assistant turn (the model's text, already cut at any ``<tool_response>``).

    Example:
        >>> assistant_message("<think>x</think><response>y</response>").role
        'assistant'
    """
    return ChatMessage("assistant", (TextPart(text),))


def observation_message(text: str, images: Sequence[ImagePart] = ()) -> ChatMessage:
    """The observation turn: ``<tool_response>\\n``, images, text, ``\\n</tool_response>``; one user message.

    Example:
        >>> observation_message("42").text
        '<tool_response>\\n42\\n</tool_response>'
    """
    return ChatMessage("user", (TextPart(TOOL_RESPONSE_OPEN), *images, TextPart(text + TOOL_RESPONSE_CLOSE)))


def message_chars(message: ChatMessage) -> int:
    """Characters of text in ``message`` (images count 0); the runner's default context measure.

    Example:
        >>> message_chars(assistant_message("abc"))
        3
    """
    return sum(len(p.text) for p in message.content if isinstance(p, TextPart))


def transcript_messages(transcript: Transcript, *, with_images: bool = True) -> list[ChatMessage]:
    """Rebuild the chat the model saw from a (saved or in-memory) transcript, images decoded from its store.

    The result equals the message list the runner sent with the last policy call, plus the last assistant
    turn and its observation. ``with_images=False`` leaves image parts out (text-only views).

    Example:
        >>> from opensearch_vl.tools_env.transcript import TaskInfo, Transcript
        >>> [m.role for m in transcript_messages(Transcript(task=TaskInfo(id="a", question="q?")))]
        ['user']
    """
    cache: dict[str, Image.Image] = {}

    def parts(ids: Sequence[str]) -> list[ImagePart]:
        if not with_images:
            return []
        out = []
        for image_id in ids:
            if image_id not in cache:
                image = Image.open(io.BytesIO(transcript.image_bytes(image_id)))
                image.load()
                cache[image_id] = image.convert("RGB")
            out.append(ImagePart(image_id, cache[image_id]))
        return out

    messages: list[ChatMessage] = []
    if transcript.system_prompt is not None:
        messages.append(system_message(transcript.system_prompt))
    messages.append(task_message(transcript.task.question, parts(transcript.task.image_ids)))
    for step in transcript.steps:
        messages.append(assistant_message(step.model_text))
        if step.observation is not None:
            messages.append(observation_message(step.observation, parts(step.observation_image_ids)))
    return messages
