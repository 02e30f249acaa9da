"""Loaders for the knowledge-VQA sets published as Hugging Face rows: SimpleVQA, MMSearch, LiveVQA and HLE.

Each reads the published columns (parquet, JSONL or JSON rows, images inline or as paths beside the file).

Example:
    >>> tasks = load_tasks("simplevqa", "SimpleVQA/test.parquet", language="EN")  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from opensearch_vl.eval.benchmarks.rows import answer_list, data_files, image_sources, pick, read_rows
from opensearch_vl.eval.registry import BenchmarkProfile, benchmark
from opensearch_vl.tools_env.task import Task

__all__ = ["load_simplevqa", "load_mmsearch", "load_livevqa", "load_hle"]


def _rows(path: Path) -> Iterator[tuple[int, Path, dict[str, Any]]]:
    index = 0
    for file in data_files(path):
        for row in read_rows(file):
            yield index, file.parent, row
            index += 1


def _meta(row: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: row[k] for k in keys if k in row and isinstance(row[k], (str, int, float, bool, type(None)))}


@benchmark(
    "simplevqa",
    profile=BenchmarkProfile(
        notes="HF m-a-p/SimpleVQA (test): data_id, image (base64), question, answer, language, …; "
        "peers use the English rows (language=EN)."
    ),
)
def load_simplevqa(path: Path, language: str | None = None) -> Iterator[Task]:
    """SimpleVQA rows; ``language`` (``EN`` or ``CN``) keeps one language."""
    for index, base, row in _rows(path):
        if language and str(row.get("language", "")).upper() != language.upper():
            continue
        yield Task(
            id=str(pick(row, "data_id", "id", default=index)),
            question=str(row["question"]),
            images=image_sources(pick(row, "image", "images"), base),
            answers=answer_list(row.get("answer")),
            metadata=_meta(
                row,
                ("language", "original_category", "vqa_category", "source", "atomic_question", "atomic_fact"),
            ),
        )


@benchmark(
    "mmsearch",
    profile=BenchmarkProfile(
        notes="HF CaraJ/MMSearch end2end: query, query_image, gt_answer, alternative_gt_answers, area, subfield; "
        "only rows with a query image are kept (the 171-case image-question subset)."
    ),
)
def load_mmsearch(path: Path) -> Iterator[Task]:
    """MMSearch end-to-end rows that have a query image."""
    for index, base, row in _rows(path):
        images = image_sources(pick(row, "query_image", "image", "images"), base)
        if not images:
            continue
        yield Task(
            id=str(pick(row, "sample_id", "id", "data_id", default=index)),
            question=str(pick(row, "query", "question")),
            images=images,
            answers=answer_list(
                pick(row, "gt_answer", "answer"), row.get("alternative_gt_answers"), row.get("answers")
            ),
            metadata=_meta(row, ("area", "subfield", "timestamp")),
        )


@benchmark(
    "livevqa",
    profile=BenchmarkProfile(
        notes="ONE-Lab/LiveVQA: id, question, Ground_Truth, Ground_Truth_List, img_path, options, level, topic, source; "
        "options, when present, are listed under the question."
    ),
)
def load_livevqa(path: Path) -> Iterator[Task]:
    """LiveVQA rows; ``img_path`` is resolved against the data file's folder."""
    for index, base, row in _rows(path):
        question = str(row["question"])
        options = row.get("options")
        if isinstance(options, (list, tuple)) and options:
            question += "\nOptions:\n" + "\n".join(str(o) for o in options)
        yield Task(
            id=str(pick(row, "id", "sample_id", default=index)),
            question=question,
            images=image_sources(pick(row, "img_path", "image", "images", "image_path"), base),
            answers=answer_list(pick(row, "Ground_Truth", "answer"), row.get("Ground_Truth_List")),
            metadata=_meta(row, ("level", "topic", "source")),
        )


@benchmark(
    "hle",
    profile=BenchmarkProfile(
        tools=BenchmarkProfile().tools + ("python_interpreter",),
        notes="HF cais/hle: id, question, image (data URI or empty), answer, answer_type, category; "
        "by default only the rows with an image (HLE-VL).",
    ),
)
def load_hle(path: Path, with_image_only: bool = True) -> Iterator[Task]:
    """HLE rows; ``with_image_only=False`` keeps the text-only questions too."""
    for index, base, row in _rows(path):
        images = image_sources(row.get("image"), base)
        if with_image_only and not images:
            continue
        yield Task(
            id=str(pick(row, "id", default=index)),
            question=str(row["question"]),
            images=images,
            answers=answer_list(row.get("answer")),
            metadata=_meta(row, ("answer_type", "category", "raw_subject")),
        )
