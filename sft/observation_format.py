"""The one observation (tool-response) format shared by SFT, RL and evaluation.

A tool result is shown to the model as a **user** turn wrapped in `<tool_response>` tags, exactly as the
Qwen3-VL chat template renders a `role: tool` message::

    <|im_start|>user
    <tool_response>
    {images}{text}
    </tool_response><|im_end|>

Image placement: images come **before** the text, with no separator. This is how Qwen3-VL's own chat
template renders a message whose content parts are `[image, ..., text]` (each image item becomes
`<|vision_start|><|image_pad|><|vision_end|>` and text items follow verbatim), which is also the part order
Qwen's documentation uses for every user message and the order the RL rollout parser of the reference code
uses (images before the text inside the tool response).

In LLaMA-Factory's ShareGPT rows the observation `value` is the text *inside* the tags (the template adds
`<tool_response>\\n` and `\\n</tool_response>`), and every image is the placeholder `<image>`, which
LLaMA-Factory expands in place to the vision tokens. So an observation with two images reads
`"<image><image>Cropped region of img_1."` and the row's `images` list holds those two files, in the order
the turns appear.

Several tool results answering one assistant turn (parallel calls) are merged into a single observation,
joined by `"\\n</tool_response>\\n<tool_response>\\n"` (the Qwen3-VL template groups consecutive tool
messages into one user turn); see `merge_observations`.

Example:
    >>> render_observation_text("Image cropped successfully. New image ID: img_2", 1)
    '<image>Image cropped successfully. New image ID: img_2'
"""

from __future__ import annotations

IMAGE_PLACEHOLDER = "<image>"
"""LLaMA-Factory's image placeholder (its `IMAGE_PLACEHOLDER` default)."""

TOOL_RESPONSE_OPEN = "<tool_response>\n"
TOOL_RESPONSE_CLOSE = "\n</tool_response>"
PARALLEL_RESPONSE_SEPARATOR = TOOL_RESPONSE_CLOSE + "\n" + TOOL_RESPONSE_OPEN
"""What joins two tool results that answer the same assistant turn."""

__all__ = [
    "IMAGE_PLACEHOLDER",
    "PARALLEL_RESPONSE_SEPARATOR",
    "TOOL_RESPONSE_CLOSE",
    "TOOL_RESPONSE_OPEN",
    "merge_observations",
    "render_observation_text",
    "wrap_tool_response",
]


def render_observation_text(text: str, n_images: int) -> str:
    """Return one tool result as an observation value: `n_images` `<image>` placeholders, then the text.

    Example:
        >>> render_observation_text("two crops", 2)
        '<image><image>two crops'
    """
    if n_images < 0:
        raise ValueError(f"n_images must be >= 0, got {n_images}")
    return IMAGE_PLACEHOLDER * n_images + text


def merge_observations(values: list[str]) -> str:
    """Join the observation values of parallel tool results into the one observation turn they form.

    Example:
        >>> merge_observations(["a", "<image>b"])
        'a\\n</tool_response>\\n<tool_response>\\n<image>b'
    """
    if not values:
        raise ValueError("merge_observations needs at least one tool result")
    return PARALLEL_RESPONSE_SEPARATOR.join(values)


def wrap_tool_response(value: str) -> str:
    """Return the observation value inside its `<tool_response>` tags (the text of the user turn).

    Example:
        >>> wrap_tool_response("<image>done")
        '<tool_response>\\n<image>done\\n</tool_response>'
    """
    return TOOL_RESPONSE_OPEN + value + TOOL_RESPONSE_CLOSE
