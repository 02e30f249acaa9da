"""A :class:`~opensearch_vl.tools_env.policy.ChatPolicy` running a Qwen3-VL checkpoint with transformers.

Dense (``Qwen3VLForConditionalGeneration``) and MoE (``Qwen3VLMoeForConditionalGeneration``) checkpoints load
through ``AutoModelForImageTextToText``; ``device_map="auto"`` spreads a large model over every visible GPU,
``"cuda:0"`` pins one, ``"cpu"`` runs anywhere (tests use a tiny locally built checkpoint). Prompts are built by
the checkpoint's own chat template through its processor, images as PIL objects in message order.

Generation is one prompt at a time (a lock serializes calls; the work runs in a thread so the event loop keeps
running tools for other episodes). For throughput, serve the checkpoint with sglang or vLLM and use
:class:`~opensearch_vl.eval.policies.openai_compat.OpenAICompatPolicy`.

torch and transformers are imported when the policy is built, never at import of this module.

Example:
    >>> policy = TransformersPolicy("/ckpt/OpenSearch-VL-8B", device_map="auto")  # doctest: +SKIP
    >>> out = await policy(messages)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opensearch_vl.eval.policies.openai_compat import SamplingConfig
from opensearch_vl.tools_env.policy import ChatMessage, ImagePart, PolicyError, PolicyOutput

from opensearch_vl.errors import ConfigError, PrerequisiteError

__all__ = ["TransformersPolicy", "to_template_messages"]

logger = logging.getLogger(__name__)
_END_MARKERS = ("<|im_end|>", "<|endoftext|>")
# Vision placeholders in *generated* text would desynchronize image tokens and images on the next turn
# (the processor expands each one); a model emitting them produced noise, so they are removed.
_VISION_TOKENS = ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>", "<|vision_pad|>")


def to_template_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """Messages in the processor chat-template format (``{"type": "image", "image": PIL}`` / text parts).

    Example:
        >>> from opensearch_vl.tools_env.policy import TextPart
        >>> to_template_messages([ChatMessage("user", (TextPart("hi"),))])
        [{'role': 'user', 'content': [{'type': 'text', 'text': 'hi'}]}]
    """
    out = []
    for message in messages:
        parts = []
        for part in message.content:
            if isinstance(part, ImagePart):
                parts.append({"type": "image", "image": part.image})
            elif part.text:
                parts.append({"type": "text", "text": part.text})
        out.append({"role": message.role, "content": parts})
    return out


class TransformersPolicy:
    """Local transformers inference for the Qwen3-VL family.

    Args:
        path: checkpoint folder (weights, config, processor, tokenizer).
        sampling: temperature (0 = greedy), top_p, top_k, max_tokens (new tokens per turn), seed.
        device_map: ``"auto"`` (all GPUs), ``"cuda:0"``, ``"cpu"``, or a transformers device map.
        dtype: ``"auto"`` (the checkpoint's), ``"bfloat16"``, ``"float32"``…
        max_context_tokens: prompts longer than this raise a context-overflow :class:`PolicyError`;
            ``None`` uses the model config's ``max_position_embeddings``.
        attn_implementation: passed to ``from_pretrained`` (e.g. ``"flash_attention_2"``, ``"sdpa"``).
    """

    def __init__(
        self,
        path: str | Path,
        sampling: SamplingConfig | None = None,
        *,
        device_map: Any = "auto",
        dtype: str = "auto",
        max_context_tokens: int | None = None,
        attn_implementation: str | None = None,
    ) -> None:
        self.path = Path(path)
        if not (self.path / "config.json").is_file():
            raise ConfigError(
                f"{self.path}: not a checkpoint folder (no config.json); pass --model PATH of a "
                "saved Qwen3-VL model, or an http(s):// endpoint"
            )
        try:
            import torch
            from transformers import AutoModelForImageTextToText, AutoProcessor
        except ImportError as exc:
            raise PrerequisiteError(
                "local inference needs torch and transformers: pip install 'opensearch-vl[sft]'"
            ) from exc
        self.sampling = sampling or SamplingConfig()
        self._torch = torch
        if self.sampling.seed is not None:
            torch.manual_seed(self.sampling.seed)
        if device_map == "cpu" or not torch.cuda.is_available():
            device_map = "cpu" if device_map in ("auto", None) else device_map
        kwargs: dict[str, Any] = {
            "dtype": dtype if dtype == "auto" else getattr(torch, dtype),
            "device_map": device_map,
        }
        if attn_implementation:
            kwargs["attn_implementation"] = attn_implementation
        self.processor = AutoProcessor.from_pretrained(self.path)
        self.model = AutoModelForImageTextToText.from_pretrained(self.path, **kwargs).eval()
        text_config = getattr(self.model.config, "text_config", self.model.config)
        self.max_context_tokens = max_context_tokens or getattr(text_config, "max_position_embeddings", None)
        self._lock = threading.Lock()
        self.device_map = device_map

    @property
    def meta(self) -> dict[str, Any]:
        """What the transcript records as its producing policy."""
        return {
            "kind": "transformers",
            "path": str(self.path),
            "model": self.path.name,
            "architecture": type(self.model).__name__,
            "device_map": str(self.device_map),
            "sampling": self.sampling.request_fields(),
        }

    async def __call__(self, messages: Sequence[ChatMessage]) -> PolicyOutput:
        """One assistant turn, generated in a worker thread."""
        return await asyncio.to_thread(self._generate, messages)

    def _generate(self, messages: Sequence[ChatMessage]) -> PolicyOutput:
        torch = self._torch
        inputs = self.processor.apply_chat_template(
            to_template_messages(messages),
            tokenize=True,
            add_generation_prompt=True,
            return_dict=True,
            return_tensors="pt",
        )
        prompt_len = int(inputs["input_ids"].shape[-1])
        if self.max_context_tokens is not None and prompt_len + 1 > self.max_context_tokens:
            raise PolicyError(
                f"prompt of {prompt_len} tokens exceeds the context of {self.max_context_tokens}",
                context_overflow=True,
            )
        max_new = self.sampling.max_tokens
        if self.max_context_tokens is not None:
            max_new = max(1, min(max_new, self.max_context_tokens - prompt_len))
        sample = self.sampling.temperature > 0
        gen_kwargs: dict[str, Any] = {"max_new_tokens": max_new, "do_sample": sample}
        if sample:
            gen_kwargs.update(temperature=self.sampling.temperature, top_p=self.sampling.top_p)
            if self.sampling.top_k:
                gen_kwargs["top_k"] = self.sampling.top_k
        device = self.model.device
        inputs = {k: v.to(device) if hasattr(v, "to") else v for k, v in inputs.items()}
        with self._lock, torch.inference_mode():
            output = self.model.generate(**inputs, **gen_kwargs)
        new_tokens = output[0, prompt_len:]
        text = self.processor.tokenizer.decode(new_tokens, skip_special_tokens=False)
        finish = "length" if len(new_tokens) >= max_new else "stop"
        for marker in _END_MARKERS:
            if marker in text:
                text = text.split(marker, 1)[0]
                finish = "stop"
        stripped = sum(text.count(token) for token in _VISION_TOKENS)
        for token in _VISION_TOKENS:
            text = text.replace(token, "")
        return PolicyOutput(
            text=text,
            prompt_tokens=prompt_len,
            completion_tokens=int(len(new_tokens)),
            finish_reason=finish,
            info={"stripped_vision_tokens": stripped} if stripped else {},
        )
