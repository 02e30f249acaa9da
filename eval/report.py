"""Reports computed from run folders alone: Pass@1, judge identity, tool use, terminations, fatal cascades.

``build_report(run_dir)`` reads the header and every case file and returns a JSON-able dict;
``render_markdown(reports)`` makes the per-benchmark table and the detail sections; ``write_report`` writes
``report.json`` and ``report.md`` into the run folder.

Definitions:

- **Pass@1** = correct / scored cases. A case is *unscored* when its answer score is missing or ``None`` (the
  judge replied but gave no verdict); unscored cases are counted separately, never as wrong. An episode that
  ended without an answer is scored 0. ``pass_at_1_all`` divides by every case (unscored as wrong).
- **Fetch success rate**: share of ``visit`` calls that were not error steps.
- **Fatal rate**: share of episodes that ended in a K-error cascade.

Example:
    >>> report = build_report("runs/demo-oracle")  # doctest: +SKIP
    >>> report["pass_at_1"]  # doctest: +SKIP
    1.0
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from statistics import mean
from typing import Any

from opensearch_vl.eval.run_log import RunLog
from opensearch_vl.tools_env.transcript import Transcript

from opensearch_vl.atomic_write import atomic_write_bytes

__all__ = ["build_report", "summarize_transcripts", "render_markdown", "write_report"]


def _rate(num: int, den: int) -> float | None:
    return num / den if den else None


def summarize_transcripts(transcripts: Sequence[Transcript]) -> dict[str, Any]:
    """The report numbers for a list of transcripts (used by :func:`build_report`).

    Example:
        >>> summarize_transcripts([])["cases"]
        0
    """
    n = len(transcripts)
    correct = incorrect = unscored = fallback = 0
    judges: Counter[tuple[str, str]] = Counter()
    terminations: Counter[str] = Counter()
    tool_calls: Counter[str] = Counter()
    tool_errors: Counter[str] = Counter()
    error_categories: Counter[str] = Counter()
    fatal_steps: list[int] = []
    process_values: list[float] = []
    for t in transcripts:
        score = t.scores.get("answer")
        if score is None or score.value is None:
            unscored += 1
        elif score.value >= 1.0:
            correct += 1
        else:
            incorrect += 1
        if score is not None:
            fallback += int(score.fallback)
            if not score.metadata.get("no_answer"):
                judges[(score.judge_model or "?", (score.prompt_sha256 or "")[:12])] += 1
        process = t.scores.get("process")
        if process is not None and process.value is not None:
            process_values.append(process.value)
        terminations[t.termination or "unknown"] += 1
        if t.fatal_step_index is not None:
            fatal_steps.append(t.fatal_step_index)
        for step in t.steps:
            if step.action.kind == "tool_call" and step.action.tool:
                tool_calls[step.action.tool] += 1
                if step.error:
                    tool_errors[step.action.tool] += 1
            if step.error and step.error_category:
                error_categories[step.error_category] += 1
    scored = correct + incorrect
    visits = tool_calls.get("visit", 0)
    steps = [len(t.steps) for t in transcripts]
    return {
        "cases": n,
        "correct": correct,
        "incorrect": incorrect,
        "unscored": unscored,
        "pass_at_1": _rate(correct, scored),
        "pass_at_1_all": _rate(correct, n),
        "judge": [{"model": m, "prompt_sha256": h, "verdicts": c} for (m, h), c in judges.most_common()],
        "judge_fallbacks": fallback,
        "answered": terminations.get("answer", 0),
        "terminations": dict(terminations.most_common()),
        "fatal": {
            "episodes": len(fatal_steps),
            "rate": _rate(len(fatal_steps), n),
            "mean_fatal_step": mean(fatal_steps) if fatal_steps else None,
        },
        "tools": {
            name: {"calls": c, "errors": tool_errors.get(name, 0)} for name, c in tool_calls.most_common()
        },
        "error_categories": dict(error_categories.most_common()),
        "fetch_success_rate": _rate(visits - tool_errors.get("visit", 0), visits),
        "mean_turns": mean(steps) if steps else None,
        "mean_tool_calls": sum(tool_calls.values()) / n if n else None,
        "well_formed_rate": mean(t.metrics.get("well_formed_rate", 0.0) for t in transcripts) if n else None,
        "mean_wall_time_s": mean(t.wall_time_s or 0.0 for t in transcripts) if n else None,
        "process_score_mean": mean(process_values) if process_values else None,
    }


def build_report(run_dir: str | Path) -> dict[str, Any]:
    """The report of one run folder (header fields plus :func:`summarize_transcripts`)."""
    log = RunLog(run_dir)
    header = log.read_header()
    transcripts = list(log.transcripts())
    summary = summarize_transcripts(transcripts)
    if not summary["judge"] and header.judge.get("answer"):
        judge = header.judge["answer"]
        summary["judge"] = [
            {
                "model": judge.get("model"),
                "prompt_sha256": (judge.get("prompt_sha256") or "")[:12],
                "verdicts": 0,
            }
        ]
    model = header.policy.get("model") or header.policy.get("script") or header.config.get("model")
    return {
        "run": str(log.root),
        "benchmark": header.benchmark,
        "model": model,
        "status": header.status,
        "expected_cases": header.counts.get("cases"),
        "git_revision": header.environment.get("git_revision"),
        "profile": header.profile,
        **summary,
    }


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def render_markdown(reports: Sequence[dict[str, Any]]) -> str:
    """A Markdown page: the Pass@1 table (one row per run), then each run's details."""
    lines = [
        "# Evaluation report",
        "",
        "| Benchmark | Model | Cases | Pass@1 (%) | Correct | Unscored | Answered | Fatal (%) | "
        "Fetch ok (%) | Judge |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in reports:
        judge = ", ".join(f"{j['model']}@{j['prompt_sha256'] or '-'}" for j in r["judge"]) or "–"
        cases = f"{r['cases']}" + (
            f"/{r['expected_cases']}" if r.get("expected_cases") not in (None, r["cases"]) else ""
        )
        lines.append(
            f"| {r['benchmark']} | {r['model']} | {cases} | {_pct(r['pass_at_1'])} | {r['correct']} | "
            f"{r['unscored']} | {r['answered']} | {_pct(r['fatal']['rate'])} | "
            f"{_pct(r['fetch_success_rate'])} | {judge} |"
        )
    lines += [
        "",
        "Pass@1 = correct / scored cases; unscored verdicts are counted separately, never as wrong. "
        "Episodes without an answer count as wrong.",
        "",
    ]
    for r in reports:
        lines += [
            f"## {r['benchmark']} — {r['model']}",
            "",
            f"- run folder: `{r['run']}` (status {r['status']}, git {r['git_revision'] or 'unknown'})",
            f"- Pass@1 over all cases (unscored as wrong): {_pct(r['pass_at_1_all'])}%",
            f"- judge fallbacks to rule matching: {r['judge_fallbacks']}",
            f"- mean turns {_fmt(r['mean_turns'])}, well-formed turns {_pct(r['well_formed_rate'])}%, "
            f"mean wall time {_fmt(r['mean_wall_time_s'])} s",
            f"- fatal cascades: {r['fatal']['episodes']} (mean first fatal step "
            f"{_fmt(r['fatal']['mean_fatal_step'])})",
            "",
        ]
        if r.get("process_score_mean") is not None:
            lines.insert(-1, f"- mean process score: {r['process_score_mean']:.3f}")
        lines += ["| Termination | Episodes |", "|---|---:|"]
        lines += [f"| {k} | {v} |" for k, v in r["terminations"].items()]
        lines += ["", "| Tool | Calls | Errors |", "|---|---:|---:|"]
        lines += [f"| {k} | {v['calls']} | {v['errors']} |" for k, v in r["tools"].items()] or [
            "| (none) | 0 | 0 |"
        ]
        if r["error_categories"]:
            lines += ["", "| Error category | Steps |", "|---|---:|"]
            lines += [f"| {k} | {v} |" for k, v in r["error_categories"].items()]
        lines.append("")
    return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def write_report(run_dir: str | Path) -> dict[str, Any]:
    """Write ``report.json`` and ``report.md`` into ``run_dir``; returns the report."""
    report = build_report(run_dir)
    root = Path(run_dir)
    atomic_write_bytes(root / "report.json", json.dumps(report, indent=1).encode())
    atomic_write_bytes(root / "report.md", render_markdown([report]).encode())
    return report
