"""The main job's evaluation step: a policy on the bundled mini-benchmark with offline tools, report and viewer.

:func:`run_demo` makes two runs in ``out``:

- ``oracle/``: the hand-written scripted policy (``eval/data/mini/oracle_turns.jsonl``), so the viewer shows
  meaningful trajectories (image search, crop, OCR, text search, visit, final answer);
- ``model/``: the policy you point at (an endpoint URL or a checkpoint folder), or, by default, a tiny random
  Qwen3-VL built locally (its turns are noise: invalid steps and fatal cascades; the report is still complete).

Then it writes ``report.md`` / ``report.json`` (both runs in one table) and ``index.html`` linking the viewers.

Example:
    >>> result = run_demo("runs/demo")  # doctest: +SKIP
    >>> result.index  # doctest: +SKIP
    PosixPath('runs/demo/index.html')
"""

from __future__ import annotations

import html
import json
import logging
from dataclasses import dataclass
from pathlib import Path

from opensearch_vl.eval.benchmarks.mini import mini_data_dir
from opensearch_vl.eval.judge import JudgeConfig
from opensearch_vl.eval.policies import SamplingConfig
from opensearch_vl.eval.report import render_markdown, write_report
from opensearch_vl.eval.run import EvalRunConfig, run_eval
from opensearch_vl.eval.viewer import write_viewer

from opensearch_vl.atomic_write import atomic_write_bytes

__all__ = ["DemoResult", "run_demo", "oracle_script"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DemoResult:
    """Where the demo wrote, and the two reports."""

    out: Path
    index: Path
    reports: list[dict]


def oracle_script() -> Path:
    """The bundled oracle policy file for the mini-benchmark."""
    return mini_data_dir() / "oracle_turns.jsonl"


def run_demo(
    out: str | Path,
    *,
    model: str | None = None,
    model_name: str | None = None,
    judge: JudgeConfig | None = None,
    max_turns: int = 6,
    max_tokens: int = 96,
    cache_mode: str = "read_write",
    progress: bool = True,
    seed: int = 0,
) -> DemoResult:
    """Evaluate the oracle and a model on the mini-benchmark; see the module docstring.

    Args:
        out: output folder (re-running resumes both runs).
        model: endpoint URL or checkpoint folder; ``None`` builds the tiny random Qwen3-VL under ``out``.
        model_name: model name for an endpoint.
        judge: answer judge (default: rule-based).
        max_turns, max_tokens: limits for the model run (small by default: the tiny model runs on CPU).
    """
    out = Path(out)
    judge = judge or JudgeConfig()
    common = dict(benchmark="mini", judge=judge, cache_mode=cache_mode, seed=seed, concurrency=4)
    runs = [("oracle", EvalRunConfig(model=f"scripted:{oracle_script()}", out=str(out / "oracle"), **common))]
    device_map = "auto"
    if model is None:
        from opensearch_vl.sft.tiny_model import build_tiny_qwen3vl

        checkpoint = out / "tiny-qwen3vl"
        if not (checkpoint / "config.json").is_file():
            build_tiny_qwen3vl(checkpoint, seed=seed)
        model, device_map = str(checkpoint), "cpu"
    sampling = SamplingConfig(max_tokens=max_tokens)
    runs.append(
        (
            "model",
            EvalRunConfig(
                model=model,
                model_name=model_name,
                out=str(out / "model"),
                max_turns=max_turns,
                sampling=sampling,
                device_map=device_map,
                **common,
            ),
        )
    )
    reports = []
    for name, config in runs:
        logger.info("demo: %s run into %s", name, config.out)
        run_eval(config, progress=progress)
        reports.append(write_report(config.out))
        write_viewer(config.out)
    atomic_write_bytes(out / "report.json", json.dumps(reports, indent=1).encode())
    atomic_write_bytes(out / "report.md", render_markdown(reports).encode())
    items = []
    for (name, _), r in zip(runs, reports):
        score = "–" if r["pass_at_1"] is None else f"{100 * r['pass_at_1']:.1f}%"
        items.append(
            f'<li><a href="{name}/viewer/index.html">{name}</a>: {html.escape(str(r["model"]))}, '
            f"Pass@1 {score}, {r['cases']} cases</li>"
        )
    links = "".join(items)
    index = out / "index.html"
    atomic_write_bytes(
        index,
        (
            f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>opensearch-vl demo</title>"
            f"</head><body><h1>opensearch-vl demo: mini-benchmark</h1><ul>{links}</ul>"
            f"<p>Full tables: report.md</p></body></html>"
        ).encode(),
    )
    return DemoResult(out=out, index=index, reports=reports)
