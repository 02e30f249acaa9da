"""The benchmark registry: ``@benchmark("name", profile=...)`` on a loader function.

A loader is ``load(path, **options) -> Iterable[Task]``: it reads local files in the benchmark's published
format and yields one :class:`~opensearch_vl.tools_env.task.Task` per case. The :class:`BenchmarkProfile` says
how the benchmark is run: which tools the agent gets, the turn limit and the judge. Third-party packages add
benchmarks through the ``opensearch_vl.benchmarks`` entry-point group (each entry point is a module that
registers on import), loaded lazily, once; a failing plug-in is logged and skipped.

Example:
    >>> @benchmark("my_bench", profile=BenchmarkProfile(max_turns=10))
    ... def load_my_bench(path, **options):
    ...     yield Task(id="1", question="What is shown?", images=[], answers=["a cat"])
    >>> get_benchmark("my_bench").profile.max_turns
    10
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from opensearch_vl.tools_env.task import Task

from opensearch_vl.errors import ConfigError

__all__ = [
    "BenchmarkProfile",
    "BenchmarkSpec",
    "benchmark",
    "get_benchmark",
    "available_benchmarks",
    "load_tasks",
    "SEARCH_TOOLS",
    "DEFAULT_TOOLS",
]

logger = logging.getLogger(__name__)

SEARCH_TOOLS = ("text_search", "image_search", "visit")
DEFAULT_TOOLS = (
    "crop",
    "layout_parsing",
    "perspective_correct",
    "super_resolution",
    "sharpen",
) + SEARCH_TOOLS
"""The paper's seven evaluation tools plus ``visit`` (page reading, whose success rate reports show)."""

Loader = Callable[..., Iterable[Task]]


@dataclass(frozen=True)
class BenchmarkProfile:
    """How a benchmark is run."""

    tools: tuple[str, ...] = DEFAULT_TOOLS
    """Tools offered to the model, by registered tool name."""
    max_turns: int = 50
    """Model turns per episode (the reference inference limit is 50)."""
    judge: Literal["llm", "rule"] = "llm"
    """``llm``: the VDR-Bench style answer judge when a judge endpoint is given (rule match otherwise);
    ``rule``: always the rule matcher."""
    notes: str = ""
    """Where the data comes from and what subset the loader keeps."""


@dataclass(frozen=True)
class BenchmarkSpec:
    """A registered benchmark: its name, loader and profile."""

    name: str
    loader: Loader
    profile: BenchmarkProfile = field(default_factory=BenchmarkProfile)

    def load(self, path: str | Path, **options: Any) -> list[Task]:
        """Load every case from ``path``, tagging each with the benchmark name; ids must be unique."""
        tasks = []
        seen: set[str] = set()
        for task in self.loader(Path(path), **options):
            if task.id in seen:
                raise ConfigError(f"{self.name}: duplicate case id {task.id!r} in {path}; ids must be unique")
            seen.add(task.id)
            tasks.append(task if task.benchmark else task.model_copy(update={"benchmark": self.name}))
        return tasks


_REGISTRY: dict[str, BenchmarkSpec] = {}
_loaded = False


def benchmark(name: str, *, profile: BenchmarkProfile | None = None) -> Callable[[Loader], Loader]:
    """Decorator registering ``loader`` under ``name`` (a later registration replaces an earlier one)."""

    def decorate(loader: Loader) -> Loader:
        _REGISTRY[name] = BenchmarkSpec(name, loader, profile or BenchmarkProfile())
        return loader

    return decorate


def _load_builtins() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    importlib.import_module("opensearch_vl.eval.benchmarks")
    from importlib.metadata import entry_points

    for entry in entry_points(group="opensearch_vl.benchmarks"):
        try:
            entry.load()
        except Exception as exc:  # a broken plug-in must not break the built-in benchmarks
            logger.warning("benchmark plug-in %s failed to load: %s", entry.name, exc)


def get_benchmark(name: str) -> BenchmarkSpec:
    """The registered benchmark ``name``; an unknown name lists the available ones."""
    _load_builtins()
    if name not in _REGISTRY:
        raise ConfigError(f"unknown benchmark {name!r}; available: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def available_benchmarks() -> list[str]:
    """Names of every registered benchmark."""
    _load_builtins()
    return sorted(_REGISTRY)


def load_tasks(name: str, path: str | Path, **options: Any) -> list[Task]:
    """Load benchmark ``name`` from ``path``. Example: ``load_tasks("browsecomp_vl", "bc_vl/")``."""
    return get_benchmark(name).load(path, **options)
