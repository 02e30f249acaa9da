"""Build a tiny, random, fully local Qwen3-VL checkpoint (model + tokenizer + processor) for tests and smoke
runs.

Nothing is downloaded. The tokenizer is a small byte-level BPE trained on a fixed corpus, but it carries
Qwen's real special tokens (`<|im_start|>`, `<|im_end|>`, `<|vision_start|>`, `<|image_pad|>`, `<tool_call>`,
`<tool_response>`, `<think>`, …) as single tokens, so every chat-format string renders and tokenizes the way
it
does for the real checkpoints (only the ids differ). The processor is transformers' own `Qwen3VLProcessor`
with Qwen3-VL's image geometry (patch 16, spatial merge 2, temporal patch 2), so image token counts follow
the real `smart_resize` formula. The model is `Qwen3VLForConditionalGeneration` with a 2-layer, 64-wide text
tower and a 2-block vision tower (about 0.3 M parameters, ~1 MB on disk).

The build is deterministic for a given seed: same files, same weights.

Example:
    >>> from opensearch_vl.sft.tiny_model import build_tiny_qwen3vl
    >>> path = build_tiny_qwen3vl("/tmp/tiny-qwen3vl")  # doctest: +SKIP
    >>> sorted(p.name for p in path.iterdir())[:3]  # doctest: +SKIP
    ['chat_template.jinja', 'config.json', 'generation_config.json']
"""

from __future__ import annotations

import logging
from pathlib import Path

logger = logging.getLogger(__name__)

__all__ = ["QWEN_SPECIAL_TOKENS", "QWEN_ADDED_TOKENS", "TINY_IMAGE_MIN_PIXELS", "build_tiny_qwen3vl"]

QWEN_SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)
"""Qwen2.5/Qwen3(-VL) special tokens, in Qwen's id order (151643… in the real vocabulary)."""

QWEN_ADDED_TOKENS = (
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
)
"""Qwen's added, non-special tokens (151657… in the real vocabulary)."""

TINY_IMAGE_MIN_PIXELS = 32 * 32 * 4
"""The tiny processor's `smart_resize` floor: small, so test images cost few tokens (Qwen3-VL: 65,536)."""

TINY_IMAGE_MAX_PIXELS = 16777216
"""The processor's `smart_resize` ceiling, as in Qwen3-VL's preprocessor config."""

_CHAT_TEMPLATE = (
    # No whitespace control ({%- -%}) anywhere: every newline below is one Qwen3-VL's format has, so
    # stripping around tags would eat the newline after a role name. transformers renders with
    # trim_blocks, which drops a newline right after a block tag, so those are written as {{ '\\n' }}.
    "{% macro render(content) %}{% if content is string %}{{ content }}{% else %}"
    "{% for part in content %}{% if part.type == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part.type == 'text' %}{{ part.text }}{% endif %}{% endfor %}{% endif %}{% endmacro %}"
    "{% if tools %}<|im_start|>system\n"
    "{% if messages[0].role == 'system' %}{{ render(messages[0].content) }}\n\n{% endif %}"
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
    "{% for tool in tools %}{{ '\\n' }}{{ tool | tojson }}{% endfor %}{{ '\\n' }}</tools>\n\n"
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
    "{% elif messages[0].role == 'system' %}<|im_start|>system\n{{ render(messages[0].content) }}<|im_end|>\n"
    "{% endif %}"
    "{% for message in messages %}{% if message.role == 'tool' %}"
    "<|im_start|>user\n<tool_response>\n{{ render(message.content) }}\n</tool_response><|im_end|>\n"
    "{% elif message.role != 'system' %}"
    "<|im_start|>{{ message.role }}\n{{ render(message.content) }}<|im_end|>\n"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# Qwen3-VL's message layout for generation with the tiny model (roles, tools block, image placeholders,
# tool responses as user turns); training renders with the registered LLaMA-Factory template instead.

_CORPUS = (
    "The image shows a red square in the top left corner and a blue circle on the right.",
    "I need to crop the region to read the small text, then search for the entity.",
    "Image cropped successfully. New image ID: img_2. The answer is the Forbidden City in Beijing.",
    "Search results: 1. [Palace Museum](https://example.org/palace) The museum was founded in 1925.",
    '{"name": "crop", "arguments": {"image": "img_1", "x": 0, "y": 0, "width": 32, "height": 32}}',
    '{"type": "function", "function": {"name": "text_search", "description": "Search the web", '
    '"parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}}',
    "# Tools\n\nYou may call one or more functions to assist with the user query.",
    "You are a Visual Investigation Agent. Verify, don't guess. Think step by step.",
    "What is the color of the shape? Which year was it built? Who painted this artwork?",
    "0123456789 , . : ; ! ? ( ) [ ] { } < > / \\ \" ' - _ = + * & % $ # @ ~ `",
)


def _build_tokenizer(vocab_size: int):
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(QWEN_SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(_CORPUS) * 4, trainer=trainer)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in QWEN_ADDED_TOKENS])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        model_max_length=32768,
        chat_template=_CHAT_TEMPLATE,
        extra_special_tokens={
            "image_token": "<|image_pad|>",
            "video_token": "<|video_pad|>",
            "vision_bos_token": "<|vision_start|>",
            "vision_eos_token": "<|vision_end|>",
        },
    )


def _build_processor(tokenizer):
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor
    from transformers.models.qwen3_vl.processing_qwen3_vl import Qwen3VLProcessor
    from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

    geometry = dict(patch_size=16, merge_size=2, temporal_patch_size=2)
    image_processor = Qwen2VLImageProcessor(
        size={"shortest_edge": TINY_IMAGE_MIN_PIXELS, "longest_edge": TINY_IMAGE_MAX_PIXELS},
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
        **geometry,
    )
    video_processor = Qwen3VLVideoProcessor(
        size={"shortest_edge": TINY_IMAGE_MIN_PIXELS, "longest_edge": TINY_IMAGE_MAX_PIXELS}, **geometry
    )
    return Qwen3VLProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        video_processor=video_processor,
        chat_template=_CHAT_TEMPLATE,
    )


def build_tiny_qwen3vl(out_dir: str | Path, seed: int = 0, vocab_size: int = 600) -> Path:
    """Write a tiny random Qwen3-VL checkpoint (weights, config, tokenizer, processor) to `out_dir`.

    Loadable with `AutoModelForImageTextToText`, `AutoTokenizer` and `AutoProcessor` from that folder, and by
    `llamafactory-cli train` as `model_name_or_path`. Takes a few seconds; deterministic for a given seed.

    Example:
        >>> path = build_tiny_qwen3vl("/tmp/tiny", seed=0)  # doctest: +SKIP
        >>> (path / "model.safetensors").exists()  # doctest: +SKIP
        True
    """
    import torch
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = _build_tokenizer(vocab_size)
    processor = _build_processor(tokenizer)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in QWEN_SPECIAL_TOKENS}
    config = Qwen3VLConfig(
        text_config=dict(
            vocab_size=len(tokenizer),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            max_position_embeddings=32768,
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 10000.0,
                "mrope_section": [4, 2, 2],
                "mrope_interleaved": True,
            },
            pad_token_id=ids["<|endoftext|>"],
        ),
        vision_config=dict(
            depth=2,
            hidden_size=32,
            intermediate_size=64,
            num_heads=2,
            patch_size=16,
            spatial_merge_size=2,
            temporal_patch_size=2,
            out_hidden_size=64,
            num_position_embeddings=256,
            deepstack_visual_indexes=[0],
        ),
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = Qwen3VLForConditionalGeneration(config)
    model.generation_config.eos_token_id = [ids["<|im_end|>"], ids["<|endoftext|>"]]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.save_pretrained(out)
    processor.save_pretrained(out)
    tokenizer.save_pretrained(out)
    logger.info(
        "tiny Qwen3-VL written to %s (%d parameters)", out, sum(p.numel() for p in model.parameters())
    )
    return out
