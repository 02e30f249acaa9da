"""Transcript -> LLaMA-Factory ShareGPT row: the SFT view of an episode, converted in one direction.

A row is what `recipes/data/dataset_info.json` entries describe (`formatting: sharegpt`):

- `conversations`: `human` (task images as `<image>` then the question), then per step a `gpt` turn with the
  model's raw text (its `<think>` block and `<tool_call>` or `<response>`) and, when the tool answered, an
  `observation` turn whose value is `opensearch_vl.sft.observation_format.render_observation_text` of the
  observation text and its images (images before text, inside `<tool_response>` added by the template);
- `images`: every image in order of appearance (task images, then each observation's), as PNG files
  named by content hash, so an image shared by many rows is written once;
- `system`: the system prompt (`""` when none); `tools`: the tool schemas as a JSON **string** — or `""`
  when the system prompt already lists them (the tools environment's default prompt does), so the
  template does not add a second `# Tools` block and the row renders what the model saw.

The rendered chat is exactly what the tools environment showed the model (`tools_env.observation`), so SFT,
RL and evaluation see one format.

Example:
    >>> from opensearch_vl.tools_env.transcript import TaskInfo, Transcript
    >>> t = Transcript(task=TaskInfo(id="q", question="Hi?"), steps=[])
    >>> transcript_to_sharegpt(t, "/tmp/imgs")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    opensearch_vl.errors.DataError: transcript q has no steps ...
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opensearch_vl.sft.observation_format import IMAGE_PLACEHOLDER, render_observation_text

from opensearch_vl.errors import DataError

if TYPE_CHECKING:
    from opensearch_vl.tools_env.transcript import Transcript

__all__ = ["DATASET_INFO_ENTRY", "transcript_to_sharegpt", "write_sharegpt_dataset"]

DATASET_INFO_ENTRY = {
    "formatting": "sharegpt",
    "columns": {"messages": "conversations", "images": "images", "system": "system", "tools": "tools"},
    "tags": {
        "role_tag": "from",
        "content_tag": "value",
        "user_tag": "human",
        "assistant_tag": "gpt",
        "observation_tag": "observation",
        "function_tag": "function_call",
    },
}
"""The `dataset_info.json` entry (minus `file_name`) for rows made here."""


def transcript_to_sharegpt(
    transcript: Transcript,
    images_dir: str | Path,
    media_root: str | Path | None = None,
    allow_invalid_steps: bool = False,
) -> dict[str, Any]:
    """Convert one transcript to a ShareGPT row, writing its images (PNG, by sha256) into `images_dir`.

    Image paths are relative to `media_root` (LLaMA-Factory's `dataset_dir`/`media_dir`) when given, else
    absolute. Raises `DataError` when the episode cannot be a training sample: no steps, no final assistant
    turn (the row would end with a tool response), or, unless `allow_invalid_steps`, a turn that did not
    parse.

    Example:
        >>> row = transcript_to_sharegpt(transcript, "data/images", media_root="data")  # doctest: +SKIP
        >>> [m["from"] for m in row["conversations"]]  # doctest: +SKIP
        ['human', 'gpt', 'observation', 'gpt']
    """
    images_dir = Path(images_dir)
    tid = transcript.task.id
    if not transcript.steps:
        raise DataError(f"transcript {tid} has no steps; an SFT row needs at least one assistant turn")
    if transcript.steps[-1].observation is not None:
        raise DataError(
            f"transcript {tid} ends with a tool response (termination={transcript.termination!r}); "
            "LLaMA-Factory needs the last turn to be the assistant's. Keep only answered episodes."
        )
    images: list[str] = []

    def image_paths(ids: Iterable[str]) -> int:
        count = 0
        for image_id in ids:
            images.append(_write_image(transcript, image_id, images_dir, media_root))
            count += 1
        return count

    question = transcript.task.question
    if IMAGE_PLACEHOLDER in question:
        raise DataError(
            f"transcript {tid}: the question contains the literal placeholder {IMAGE_PLACEHOLDER!r}"
        )
    conversations = [
        {"from": "human", "value": IMAGE_PLACEHOLDER * image_paths(transcript.task.image_ids) + question}
    ]
    for step in transcript.steps:
        if step.action.kind == "invalid" and not allow_invalid_steps:
            raise DataError(
                f"transcript {tid} step {step.index} did not parse ({step.action.invalid_reason}); "
                "it would teach a malformed turn. Pass allow_invalid_steps=True to keep it."
            )
        if IMAGE_PLACEHOLDER in step.model_text or IMAGE_PLACEHOLDER in (step.observation or ""):
            raise DataError(f"transcript {tid} step {step.index} contains the literal {IMAGE_PLACEHOLDER!r}")
        conversations.append({"from": "gpt", "value": step.model_text})
        if step.observation is not None:
            n = image_paths(step.observation_image_ids)
            conversations.append(
                {"from": "observation", "value": render_observation_text(step.observation, n)}
            )
    system = transcript.system_prompt or ""
    return {
        "conversations": conversations,
        "images": images,
        "system": system,
        "tools": ""
        if _tools_in_system(transcript.tools, system)
        else json.dumps(transcript.tools, ensure_ascii=False),
    }


def _tools_in_system(tools: list[dict[str, Any]], system: str) -> bool:
    """True when every tool schema already appears, as JSON, in the system prompt the model saw."""
    return bool(tools) and all(json.dumps(t, ensure_ascii=False) in system for t in tools)


def _write_image(
    transcript: Transcript, image_id: str, images_dir: Path, media_root: str | Path | None
) -> str:
    record = transcript.image(image_id)
    target = images_dir / f"{record.sha256}.png"
    if not target.exists():
        images_dir.mkdir(parents=True, exist_ok=True)
        target.write_bytes(transcript.image_bytes(image_id))
    if media_root is None:
        return str(target.resolve())
    return str(target.resolve().relative_to(Path(media_root).resolve()))


def write_sharegpt_dataset(transcripts: Iterable[Transcript], out_dir: str | Path, name: str) -> Path:
    """Write `<name>.json`, `images/` and a `dataset_info.json` (merged if present) into `out_dir`.

    Returns the `dataset_info.json` path; use `dataset_dir: <out_dir>` and `dataset: <name>` in the recipe.

    Example:
        >>> write_sharegpt_dataset(transcripts, "data/mine", "my_sft")  # doctest: +SKIP
        PosixPath('data/mine/dataset_info.json')
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = [transcript_to_sharegpt(t, out_dir / "images", media_root=out_dir) for t in transcripts]
    (out_dir / f"{name}.json").write_text(
        json.dumps(rows, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )
    info_path = out_dir / "dataset_info.json"
    info = json.loads(info_path.read_text(encoding="utf-8")) if info_path.exists() else {}
    info[name] = {"file_name": f"{name}.json", **DATASET_INFO_ENTRY}
    info_path.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return info_path
