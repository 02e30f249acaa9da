"""Loaders for the MMSearch-R1 parquet format: FVQA (FactualVQA) and the InfoSeek rows (both layouts).

The MMSearch-R1 rows are verl-style: ``prompt`` (chat messages whose user content holds the question after an
instruction), ``images`` (``[{"bytes": …}]``), ``reward_model`` (``ground_truth``, ``candidate_answers`` as a
JSON string), ``data_id``, ``category``. The question is the user text after the last ``Question:`` marker
when there is one (MMSearch-R1's instruction is not ours), with ``<image>`` placeholders removed.

Example:
    >>> tasks = load_tasks("fvqa", "FVQA/fvqa_test.parquet")  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from opensearch_vl.eval.benchmarks.rows import answer_list, data_files, image_sources, pick, read_rows
from opensearch_vl.eval.registry import BenchmarkProfile, benchmark
from opensearch_vl.tools_env.task import Task

from opensearch_vl.errors import DataError

__all__ = ["load_fvqa", "load_infoseek", "verl_row_task"]

_QUESTION = re.compile(r"question\s*:\s*", re.I)


def _prompt_question(prompt: Any) -> str:
    if hasattr(prompt, "tolist"):
        prompt = prompt.tolist()
    if isinstance(prompt, str):
        text = prompt
    else:
        users = [m for m in prompt or [] if isinstance(m, dict) and m.get("role") == "user"]
        if not users:
            raise DataError("row has no user message in 'prompt'")
        content = users[-1].get("content")
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        text = str(content)
    text = text.replace("<image>", "").strip()
    parts = _QUESTION.split(text)
    return parts[-1].strip() if len(parts) > 1 else text


def verl_row_task(row: dict[str, Any], base: Path, index: int) -> Task:
    """A :class:`Task` from one MMSearch-R1 / verl-style row."""
    reward = row.get("reward_model") or {}
    answers = answer_list(reward.get("ground_truth"), reward.get("candidate_answers"))
    return Task(
        id=str(pick(row, "data_id", "id", default=index)),
        question=_prompt_question(row["prompt"]),
        images=image_sources(pick(row, "images", "image"), base),
        answers=answers,
        metadata={k: row[k] for k in ("category", "data_source") if isinstance(row.get(k), str)},
    )


@benchmark(
    "fvqa",
    profile=BenchmarkProfile(
        notes="lmms-lab/FVQA (MMSearch-R1 FactualVQA) test parquet; categories search_free / search_required."
    ),
)
def load_fvqa(path: Path) -> Iterator[Task]:
    """FVQA rows (MMSearch-R1 parquet)."""
    index = 0
    for file in data_files(path):
        for row in read_rows(file):
            yield verl_row_task(row, file.parent, index)
            index += 1


@benchmark(
    "infoseek",
    profile=BenchmarkProfile(
        notes="InfoSeek: the MMSearch-R1 2k subset parquet, or the original JSONL (data_id, image_id, question, "
        "answer, answer_eval) with OVEN images in image_dir (<image_id>.jpg or .JPEG)."
    ),
)
def load_infoseek(path: Path, image_dir: str | None = None) -> Iterator[Task]:
    """InfoSeek rows; original-format rows need ``image_dir`` (default: ``images/`` beside the file)."""
    index = 0
    for file in data_files(path):
        for row in read_rows(file):
            if "prompt" in row and "reward_model" in row:
                yield verl_row_task(row, file.parent, index)
            else:
                yield _original_row(
                    row, file, Path(image_dir) if image_dir else file.parent / "images", index
                )
            index += 1


def _original_row(row: dict[str, Any], file: Path, image_dir: Path, index: int) -> Task:
    image_id = row.get("image_id")
    images = image_sources(pick(row, "image", "image_path"), file.parent)
    if not images and image_id:
        candidates = [image_dir / f"{image_id}{ext}" for ext in (".jpg", ".JPEG", ".jpeg", ".png")]
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:
            raise DataError(
                f"{file}: row {index}: image {image_id} not found in {image_dir} "
                "(pass image_dir=<folder with the OVEN images>)"
            )
        images = [str(found.resolve())]
    metadata = {
        k: row[k]
        for k in ("image_id", "data_split", "entity_id", "entity_text")
        if isinstance(row.get(k), str)
    }
    ranges = [a["range"] for a in row.get("answer_eval") or [] if isinstance(a, dict) and "range" in a]
    if ranges:
        metadata["numeric_ranges"] = ranges
    return Task(
        id=str(pick(row, "data_id", "id", default=index)),
        question=str(row["question"]),
        images=images,
        answers=answer_list(row.get("answer"), row.get("answer_eval")),
        metadata=metadata,
    )
