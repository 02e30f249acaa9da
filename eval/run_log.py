"""The on-disk eval log: a run folder holding a header and one transcript file per case.

Layout of ``RUN_DIR``::

    run.json            header: status, config, benchmark profile, package versions, git revision, seeds,
                        judge identity, counts (written first, status "started"; rewritten at the end)
    cases/<case>.json   one transcript per finished case, written atomically (images in cases/images/)
    report.md|json      written by ``opensearch-vl eval report``
    viewer/             static HTML pages written by ``opensearch-vl eval view`` / ``report``

A case file exists only once its episode finished, so a run killed at any moment loses no finished case and a
re-run skips exactly those.

Example:
    >>> log = RunLog("runs/demo")  # doctest: +SKIP
    >>> log.finished_ids()  # doctest: +SKIP
    {'mini-1', 'mini-2'}
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import platform
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from opensearch_vl.tools_env.transcript import Transcript
from pydantic import BaseModel, ConfigDict, Field

from opensearch_vl import __version__
from opensearch_vl.atomic_write import atomic_write_bytes
from opensearch_vl.errors import TranscriptFormatError

__all__ = ["RunHeader", "RunLog", "case_filename", "environment_info"]

RunStatus = Literal["started", "success", "error", "cancelled"]
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_PACKAGES = ("opensearch-vl", "pydantic", "httpx", "pillow", "numpy", "torch", "transformers", "ray", "verl")


class RunHeader(BaseModel):
    """What ``run.json`` holds."""

    model_config = ConfigDict(extra="forbid")

    status: RunStatus = "started"
    producer: str = f"opensearch-vl {__version__}"
    benchmark: str
    config: dict[str, Any]
    """The :class:`~opensearch_vl.eval.run.EvalRunConfig` the run was started with."""
    profile: dict[str, Any] = Field(default_factory=dict)
    """The benchmark profile actually used (tools, turn limit, judge)."""
    policy: dict[str, Any] = Field(default_factory=dict)
    judge: dict[str, Any] = Field(default_factory=dict)
    """Identity of the answer judge: model, prompt sha256."""
    environment: dict[str, Any] = Field(default_factory=dict)
    """Package versions, git revision, python, platform."""
    seeds: dict[str, Any] = Field(default_factory=dict)
    started_at: float = Field(default_factory=time.time)
    finished_at: float | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    """cases (total), finished, skipped_existing (resumed), run_now."""
    error: str | None = None
    history: list[dict[str, Any]] = Field(default_factory=list)
    """One entry per invocation on this folder (resumes, re-judging): what ran and when."""


def case_filename(case_id: str) -> str:
    """A file name for ``case_id``: readable, and unique even when unsafe characters were replaced.

    Example:
        >>> case_filename("mini-1")
        'mini-1.json'
    """
    safe = _SAFE.sub("_", case_id).strip("._")[:80] or "case"
    if safe != case_id:
        safe += "-" + hashlib.sha256(case_id.encode()).hexdigest()[:8]
    return safe + ".json"


def _git_revision() -> str | None:
    root = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def environment_info() -> dict[str, Any]:
    """Package versions, git revision, python and platform, for the run header."""
    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "packages": versions,
        "git_revision": _git_revision(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }


class RunLog:
    """Read and write one run folder (see the module docstring)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.cases_dir = self.root / "cases"
        self.header_path = self.root / "run.json"

    def exists(self) -> bool:
        """True iff the folder holds a run header."""
        return self.header_path.is_file()

    def read_header(self) -> RunHeader:
        """The run header; a missing or broken header names the folder."""
        try:
            return RunHeader.model_validate_json(self.header_path.read_text())
        except (OSError, ValueError) as exc:
            raise TranscriptFormatError(
                f"{self.root}: no readable run.json ({exc}); is this an eval run folder?"
            ) from exc

    def write_header(self, header: RunHeader) -> None:
        """Write ``run.json`` atomically."""
        self.root.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.header_path, header.model_dump_json(indent=1).encode())

    def case_path(self, case_id: str) -> Path:
        """Where the transcript of ``case_id`` lives."""
        return self.cases_dir / case_filename(case_id)

    def save(self, transcript: Transcript) -> Path:
        """Write one finished case (images first, then the JSON, each atomically)."""
        return transcript.save(self.case_path(transcript.task.id))

    def case_files(self) -> list[Path]:
        """Every case file, sorted by name."""
        if not self.cases_dir.is_dir():
            return []
        return sorted(p for p in self.cases_dir.glob("*.json") if not p.name.startswith("."))

    def transcripts(self) -> Iterator[Transcript]:
        """Every finished case's transcript, in file-name order."""
        for path in self.case_files():
            yield Transcript.load(path)

    def finished_ids(self) -> set[str]:
        """Ids of the cases already on disk (a file that cannot be read is not finished and is re-run)."""
        ids = set()
        for path in self.case_files():
            try:
                ids.add(json.loads(path.read_text())["task"]["id"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return ids
