"""The bundled mini-benchmark: a handful of project-written questions over generated images, answerable with
the offline tools and the offline sample corpus (``tools_env/data``). Used by ``opensearch-vl demo``.

Files: ``eval/data/mini/mini.jsonl`` (``id, question, image, answers, notes``), the images beside it, and
``oracle_turns.jsonl`` (a hand-written scripted policy that solves every case).

Example:
    >>> len(load_tasks("mini", mini_data_dir())) >= 6
    True
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources
from pathlib import Path

from opensearch_vl.eval.benchmarks.rows import answer_list, data_files, image_sources, read_rows
from opensearch_vl.eval.registry import BenchmarkProfile, benchmark
from opensearch_vl.tools_env.task import Task

__all__ = ["load_mini", "mini_data_dir", "MINI_TOOLS"]

MINI_TOOLS = ("crop", "layout_parsing", "sharpen", "text_search", "image_search", "visit")


def mini_data_dir() -> Path:
    """The folder holding the bundled mini-benchmark (package data)."""
    return Path(str(resources.files("opensearch_vl.eval").joinpath("data", "mini")))


@benchmark(
    "mini",
    profile=BenchmarkProfile(
        tools=MINI_TOOLS, max_turns=12, notes="bundled with opensearch-vl; offline tools only"
    ),
)
def load_mini(path: Path | None = None) -> Iterator[Task]:
    """The mini-benchmark rows (``path`` defaults to the bundled folder)."""
    path = Path(path) if path is not None else mini_data_dir()
    for file in data_files(path, ("mini.jsonl",)):
        for row in read_rows(file):
            yield Task(
                id=str(row["id"]),
                question=str(row["question"]),
                images=image_sources(row.get("image"), file.parent),
                answers=answer_list(row["answers"]),
                metadata={"notes": row.get("notes", "")},
            )
