"""Token-exact trajectories: what the rollout model saw, as token ids, masks and images, for training.

The rollout is *token-in/token-out*: :class:`TokenTrajectory` renders the first prompt once through the
model's
processor (chat template + image-token expansion), then only ever **appends** — the model's own completion ids
exactly as generated, the few template tokens that close an assistant turn, and each new observation turn
rendered as a delta (images expanded by the processor). Earlier turns are never re-rendered, so chat-template
quirks (such as dropping ``<think>`` from history) cannot make the training sequence differ from the rollout.

:meth:`TokenTrajectory.assemble` turns it into one training row: ``prompt_ids``, ``response_ids``,
``response_mask`` (1 only on model tokens of the first ``kept_steps`` completions), rollout log-probs and the
images whose pad tokens are in the row, in order. :func:`multi_modal_inputs` runs the image processor over
them
(``pixel_values``, ``image_grid_thw``, ``images_seqlens``) so the training forward pass sees every image.

Only ``processor`` (a Hugging Face multimodal processor) is needed; no training framework is imported.

Example:
    >>> traj = TokenTrajectory(ChatRenderer(processor))  # doctest: +SKIP
    >>> prompt = traj.begin(messages)  # doctest: +SKIP
    >>> traj.add_completion([11, 12, 13], logprobs=None)  # doctest: +SKIP
    >>> row = traj.assemble(kept_steps=1)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from opensearch_vl.tools_env.policy import ChatMessage, ImagePart, TextPart
from PIL import Image

from opensearch_vl.errors import ConfigError

__all__ = [
    "ChatRenderer",
    "Segment",
    "TokenRow",
    "TokenTrajectory",
    "multi_modal_inputs",
    "image_token_count",
    "to_hf_messages",
]

logger = logging.getLogger(__name__)

_PROBE_USER = {"role": "user", "content": "x"}
_PROBE_MARK = "\u2063MARK\u2063"


def to_hf_messages(messages: Sequence[ChatMessage]) -> tuple[list[dict[str, Any]], list[Image.Image]]:
    """Our chat messages → Hugging Face chat-template messages, plus their images in order.

    Text-only messages become plain strings (every template accepts those); messages with images become
    content lists of ``{"type": "image"}`` and ``{"type": "text"}`` parts in their original order.

    Example:
        >>> to_hf_messages([ChatMessage("user", (TextPart("hi"),))])
        ([{'role': 'user', 'content': 'hi'}], [])
    """
    out: list[dict[str, Any]] = []
    images: list[Image.Image] = []
    for message in messages:
        if not any(isinstance(p, ImagePart) for p in message.content):
            out.append({"role": message.role, "content": message.text})
            continue
        parts: list[dict[str, Any]] = []
        for part in message.content:
            if isinstance(part, ImagePart):
                parts.append({"type": "image"})
                images.append(part.image)
            elif isinstance(part, TextPart) and part.text:
                parts.append({"type": "text", "text": part.text})
        out.append({"role": message.role, "content": parts})
    return out, images


class ChatRenderer:
    """Renders chat messages to token ids through a multimodal processor, incrementally.

    Args:
        processor: a Hugging Face processor with ``apply_chat_template``, ``__call__(text, images)`` and a
            ``tokenizer`` (e.g. ``Qwen3VLProcessor``).
        chat_template_kwargs: passed to ``apply_chat_template`` (e.g. ``enable_thinking``).
        mm_processor_kwargs: passed to the processor call (e.g. ``max_pixels``); must match what the trainer
            uses so image-token counts agree.

    Example:
        >>> renderer = ChatRenderer(processor)  # doctest: +SKIP
        >>> ids, images = renderer.render(messages, add_generation_prompt=True)  # doctest: +SKIP
    """

    def __init__(
        self,
        processor: Any,
        *,
        chat_template_kwargs: dict[str, Any] | None = None,
        mm_processor_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if processor is None or not hasattr(processor, "apply_chat_template"):
            raise ConfigError(
                "token-exact rollouts need the model's multimodal processor (AutoProcessor); got "
                f"{type(processor).__name__}"
            )
        self.processor = processor
        self.tokenizer = getattr(processor, "tokenizer", processor)
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.mm_processor_kwargs = dict(mm_processor_kwargs or {})
        self._close_ids: list[int] | None = None
        self._reasoning_prefix: str | None = None

    # ---- text --------------------------------------------------------------------------------------
    def _template(self, messages: list[dict[str, Any]], add_generation_prompt: bool) -> str:
        return self.processor.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=add_generation_prompt, **self.chat_template_kwargs
        )

    def _encode(self, text: str, images: list[Image.Image]) -> list[int]:
        if images:
            out = self.processor(text=[text], images=images, **self.mm_processor_kwargs)
            ids = out["input_ids"][0]
            return [int(i) for i in (ids.tolist() if hasattr(ids, "tolist") else ids)]
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def render(
        self, messages: Sequence[ChatMessage], *, add_generation_prompt: bool
    ) -> tuple[list[int], list[Image.Image]]:
        """Token ids (images expanded) and images of a whole message list."""
        hf, images = to_hf_messages(messages)
        return self._encode(self._template(hf, add_generation_prompt), images), images

    def render_delta(self, messages: Sequence[ChatMessage]) -> tuple[list[int], list[Image.Image]]:
        """Token ids of ``messages`` appended after a closed assistant turn, ending with the generation
        prompt.

        Renders a fixed probe conversation with and without the new messages and keeps the difference, so the
        delta is exactly what the full template would put there.
        """
        hf, images = to_hf_messages(messages)
        probe = [_PROBE_USER, {"role": "assistant", "content": "y"}]
        before = self._template(probe, False)
        after = self._template(probe + hf, True)
        if not after.startswith(before):
            raise ConfigError(
                "the chat template re-renders earlier turns when messages are appended; "
                "token-exact rollouts need an append-only template"
            )
        return self._encode(after[len(before) :], images), images

    def close_ids(self, completion_ids: Sequence[int]) -> list[int]:
        """Template tokens that must follow ``completion_ids`` to close the assistant turn (not generated).

        Example: Qwen's ``<|im_end|>\\n`` minus an ``<|im_end|>`` the model already produced.
        """
        if self._close_ids is None:
            text = self._template([_PROBE_USER, {"role": "assistant", "content": _PROBE_MARK}], False)
            tail = text.split(_PROBE_MARK, 1)[1]
            self._close_ids = list(self.tokenizer.encode(tail, add_special_tokens=False))
        close = list(self._close_ids)
        if close and completion_ids and completion_ids[-1] == close[0]:
            return close[1:]
        return close

    @property
    def reasoning_prefix(self) -> str:
        """Text the generation prompt already opened for the model (``"<think>\\n"`` for thinking
        templates)."""
        if self._reasoning_prefix is None:
            with_prompt = self._template([_PROBE_USER], True)
            without = self._template([_PROBE_USER], False)
            generation = with_prompt[len(without) :] if with_prompt.startswith(without) else ""
            self._reasoning_prefix = "<think>\n" if generation.rstrip().endswith("<think>") else ""
        return self._reasoning_prefix

    def decode(self, ids: Sequence[int]) -> str:
        """Completion ids → text the episode runner parses (special tokens dropped)."""
        return self.reasoning_prefix + self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def encode_text(self, text: str) -> list[int]:
        """Plain text → ids (no special tokens added)."""
        return list(self.tokenizer.encode(text, add_special_tokens=False))


@dataclass
class Segment:
    """A run of tokens of the trajectory."""

    kind: Literal["prompt", "observation", "completion"]
    token_ids: list[int]
    images: list[Image.Image] = field(default_factory=list)
    """Images whose pad tokens are in this segment, in order."""
    logprobs: list[float] | None = None
    """Rollout log-probs (completions only)."""


@dataclass(frozen=True)
class TokenRow:
    """One training row (unpadded)."""

    prompt_ids: list[int]
    response_ids: list[int]
    response_mask: list[int]
    """1 on model tokens of the kept completions, 0 on observations, template tokens and dropped steps."""
    response_logprobs: list[float] | None
    images: list[Image.Image]
    """Every image whose pad tokens are in the row, in order."""
    step_spans: list[tuple[int, int]]
    """``[start, end)`` of each completion inside ``response_ids``."""
    truncated: bool = False


class TokenTrajectory:
    """The token-level record of one rollout, built append-only (see the module docstring).

    Example:
        >>> traj = TokenTrajectory(renderer)  # doctest: +SKIP
        >>> ids = traj.begin(first_messages)  # doctest: +SKIP
    """

    def __init__(self, renderer: ChatRenderer) -> None:
        self.renderer = renderer
        self.segments: list[Segment] = []
        self.retokenized_steps = 0

    @property
    def token_ids(self) -> list[int]:
        """Every token so far (the next prompt)."""
        return [t for s in self.segments for t in s.token_ids]

    @property
    def images(self) -> list[Image.Image]:
        """Every image so far, in order."""
        return [im for s in self.segments for im in s.images]

    @property
    def num_completions(self) -> int:
        return sum(1 for s in self.segments if s.kind == "completion")

    def begin(self, messages: Sequence[ChatMessage]) -> list[int]:
        """Render the first prompt (system + task turn) with the generation prompt; returns its ids."""
        if self.segments:
            raise ValueError("begin() called twice on one TokenTrajectory")
        ids, images = self.renderer.render(messages, add_generation_prompt=True)
        self.segments.append(Segment("prompt", ids, images))
        return ids

    def add_completion(self, token_ids: Sequence[int], logprobs: Sequence[float] | None = None) -> None:
        """Record the model's completion ids (and log-probs) exactly as generated."""
        if not self.segments:
            raise ValueError("add_completion() before begin()")
        lp = list(logprobs) if logprobs else None
        if lp is not None and len(lp) != len(token_ids):
            lp = (lp + [0.0] * len(token_ids))[: len(token_ids)]
        self.segments.append(Segment("completion", list(token_ids), [], lp))

    def replace_last_completion_text(self, text: str) -> None:
        """The runner changed the model's text (cut at a hallucinated ``<tool_response>``): store what the
        model
        will see from now on, retokenized; its log-probs are dropped."""
        last = self.segments[-1]
        last.token_ids = self.renderer.encode_text(text.removeprefix(self.renderer.reasoning_prefix))
        last.logprobs = None
        self.retokenized_steps += 1

    def add_observation(self, messages: Sequence[ChatMessage]) -> list[int]:
        """Close the last assistant turn and append ``messages`` (the observation turn) plus the generation
        prompt; returns the appended ids."""
        if not self.segments or self.segments[-1].kind != "completion":
            raise ValueError("add_observation() must follow a completion")
        close = self.renderer.close_ids(self.segments[-1].token_ids)
        delta, images = self.renderer.render_delta(messages)
        ids = close + delta
        self.segments.append(Segment("observation", ids, images))
        return ids

    def assemble(
        self, kept_steps: int, *, max_response_length: int | None = None, upto_steps: int | None = None
    ) -> TokenRow:
        """The training row: completions ``< kept_steps`` get mask 1; ends with the last completion.

        ``upto_steps`` keeps only the first that many completions (``None``: all; later ones get mask 0).
        Observation segments after the last completion (never followed by a model turn) are left out. When
        ``max_response_length`` is given, whole trailing segments are dropped (a completion may be cut inside)
        so that no image is ever split from its pad tokens.
        """
        if not self.segments:
            raise ValueError("assemble() on an empty trajectory")
        prompt = self.segments[0]
        body = list(self.segments[1:])
        if upto_steps is not None:
            completions = [i for i, s in enumerate(body) if s.kind == "completion"]
            if upto_steps < len(completions):
                body = body[: completions[upto_steps]] if upto_steps > 0 else []
        while body and body[-1].kind != "completion":
            body.pop()
        response: list[int] = []
        mask: list[int] = []
        logprobs: list[float] = []
        have_logprobs = any(s.logprobs is not None for s in body if s.kind == "completion")
        images = list(prompt.images)
        spans: list[tuple[int, int]] = []
        truncated = False
        step = 0
        for segment in body:
            ids = segment.token_ids
            if max_response_length is not None and len(response) + len(ids) > max_response_length:
                truncated = True
                room = max_response_length - len(response)
                if segment.kind != "completion" or room <= 0:
                    break
                ids = ids[:room]
            if segment.kind == "completion":
                trainable = 1 if step < kept_steps else 0
                spans.append((len(response), len(response) + len(ids)))
                mask.extend([trainable] * len(ids))
                lp = segment.logprobs or [0.0] * len(segment.token_ids)
                logprobs.extend(lp[: len(ids)])
                step += 1
            else:
                mask.extend([0] * len(ids))
                logprobs.extend([0.0] * len(ids))
                images.extend(segment.images)
            response.extend(ids)
            if truncated:
                break
        return TokenRow(
            list(prompt.token_ids),
            response,
            mask,
            logprobs if have_logprobs else None,
            images,
            spans,
            truncated,
        )

    def step_prompts(self, kept_steps: int) -> list[tuple[list[int], list[int], list[float] | None, int]]:
        """Per kept completion: (cumulative prompt ids, completion ids, log-probs, images in that prompt)."""
        out = []
        prefix: list[int] = []
        n_images = 0
        step = 0
        for segment in self.segments:
            if segment.kind == "completion":
                if step >= kept_steps:
                    break
                out.append((list(prefix), list(segment.token_ids), segment.logprobs, n_images))
                step += 1
            else:
                n_images += len(segment.images)
            prefix.extend(segment.token_ids)
        return out


def multi_modal_inputs(
    processor: Any, images: Sequence[Image.Image], mm_processor_kwargs: dict[str, Any] | None = None
) -> dict[str, Any]:
    """``pixel_values``, ``image_grid_thw`` and ``images_seqlens`` (torch tensors) for ``images``; ``{}`` if
    none.

    Uses the processor's image processor with the same kwargs as rendering, so the patches match the pad
    tokens in the row one for one.

    Example:
        >>> multi_modal_inputs(processor, [])  # doctest: +SKIP
        {}
    """
    if not images:
        return {}
    import torch

    kwargs = dict(mm_processor_kwargs or {})
    out = processor.image_processor(images=list(images), return_tensors="pt", **kwargs)
    grid = out["image_grid_thw"]
    return {
        "pixel_values": out["pixel_values"],
        "image_grid_thw": grid,
        "images_seqlens": torch.repeat_interleave(grid[:, 1] * grid[:, 2], grid[:, 0]),
    }


def image_token_count(processor: Any, image_grid_thw: Any) -> int:
    """How many image-pad tokens ``image_grid_thw`` expands to: Σ prod(t,h,w) / merge_size².

    Example:
        >>> image_token_count(processor, torch.tensor([[1, 4, 4]]))  # doctest: +SKIP
        4
    """
    merge = int(getattr(processor.image_processor, "merge_size", 2))
    return int(sum(int(t) * int(h) * int(w) for t, h, w in image_grid_thw.tolist()) // (merge * merge))
