"""Loaders for the deep-research sets: VDR-Bench (full and testmini) and BrowseComp-VL (levels 1 and 2).

Example:
    >>> tasks = load_tasks("browsecomp_vl", "WebWatcher/browsecomp-vl/")  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from opensearch_vl.eval.benchmarks.rows import answer_list, data_files, image_sources, pick, read_rows
from opensearch_vl.eval.registry import BenchmarkProfile, benchmark
from opensearch_vl.tools_env.task import Task

from opensearch_vl.errors import DataError

__all__ = ["load_vdr_bench", "load_browsecomp_vl"]

_IMAGE_ID_PREFIX = re.compile(r"^\s*image_id\s*:\s*\S+\s*(question\s*:\s*)?", re.I)


def _vdr(path: Path) -> Iterator[Task]:
    index = 0
    for file in data_files(path):
        for row in read_rows(file):
            # The rLLM eval parquet prefixes the question with "image_id:1 Question: "; the agent refers to
            # images by id already, so the prefix is dropped.
            question = _IMAGE_ID_PREFIX.sub("", str(row["question"]))
            yield Task(
                id=str(pick(row, "id", "idx", "_id", "data_id", default=index)),
                question=question,
                images=image_sources(pick(row, "images", "image", "image_path"), file.parent),
                answers=answer_list(pick(row, "answer", "answers"), row.get("answer_aliases")),
                metadata={k: row[k] for k in ("category", "level") if isinstance(row.get(k), (str, int))},
            )
            index += 1


@benchmark(
    "vdr_bench",
    profile=BenchmarkProfile(
        notes="HF Osilly/VDR-Bench: question, answer, image(s), category, id (or the rLLM eval parquet: question with "
        "an 'image_id:1 Question:' prefix, answer, images as paths)."
    ),
)
def load_vdr_bench(path: Path) -> Iterator[Task]:
    """VDR-Bench rows."""
    return _vdr(path)


@benchmark(
    "vdr_bench_testmini", profile=BenchmarkProfile(notes="HF Osilly/VDR-Bench-testmini (split train).")
)
def load_vdr_bench_testmini(path: Path) -> Iterator[Task]:
    """VDR-Bench testmini rows (same columns as the full set)."""
    return _vdr(path)


def _level(file: Path) -> int | None:
    match = re.search(r"level[_-]?(\d)", file.name, re.I)
    return int(match.group(1)) if match else None


@benchmark(
    "browsecomp_vl",
    profile=BenchmarkProfile(
        tools=BenchmarkProfile().tools + ("python_interpreter",),
        notes="WebWatcher browsecomp-vl/bc_vl_level{1,2}.jsonl: question, image_path, answers, domain; images under "
        "images/level{1,2}/ (unpacked from the tar files). A folder loads both levels; level=1|2 keeps one.",
    ),
)
def load_browsecomp_vl(path: Path, level: int | None = None) -> Iterator[Task]:
    """BrowseComp-VL rows; case ids are ``l<level>-<row>`` (the files have no id column)."""
    files = data_files(path, ("bc_vl_level*.jsonl", "*.jsonl"))
    for file in files:
        file_level = _level(file)
        if level is not None and file_level is not None and int(level) != file_level:
            continue
        for index, row in enumerate(read_rows(file)):
            answers = answer_list(pick(row, "answers", "answer"))
            if not answers:
                raise DataError(f"{file}: row {index} has no answers")
            images = image_sources(pick(row, "image_path", "image", "images"), file.parent)
            prefix = f"l{file_level}" if file_level is not None else file.stem
            yield Task(
                id=str(pick(row, "id", default=f"{prefix}-{index}")),
                question=str(row["question"]),
                images=images,
                answers=answers,
                metadata={"level": file_level, "domain": row.get("domain")},
            )
