"""Static HTML trajectory viewer: one self-contained page per case and an index page per run.

Everything is inline (CSS, a few lines of JavaScript, images as base64 ``data:`` URIs), so a page can be mailed
or attached to an issue. Each step shows the model's thinking, the tool call (name and arguments), the
observation text and the images it produced; error steps are highlighted with their category, the first
step of a fatal cascade is marked, and the verdict (judge model, prompt hash, reasoning, raw reply) is shown.
The run page holds the Pass@1 summary and a case table, and embeds every case inline when the run is small.

Example:
    >>> index = write_viewer("runs/demo-oracle")  # doctest: +SKIP
    >>> index.name  # doctest: +SKIP
    'index.html'
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from string import Template

from opensearch_vl.eval.report import build_report
from opensearch_vl.eval.run_log import RunLog, case_filename
from opensearch_vl.tools_env.transcript import Score, Transcript

from opensearch_vl import __version__
from opensearch_vl.atomic_write import atomic_write_bytes
from opensearch_vl.errors import TranscriptFormatError

__all__ = ["render_case", "render_run", "write_viewer", "verdict_of"]

_INLINE_LIMIT = 100


def _esc(value: object) -> str:
    return html.escape("" if value is None else str(value))


def _template() -> Template:
    text = (
        resources.files("opensearch_vl.eval").joinpath("templates", "viewer.html").read_text(encoding="utf-8")
    )
    return Template(text)


def _page(title: str, body: str) -> str:
    return _template().substitute(title=_esc(title), body=body, producer=_esc(f"opensearch-vl {__version__}"))


def verdict_of(score: Score | None) -> str:
    """``correct``, ``incorrect`` or ``unscored`` for an answer score."""
    if score is None or score.value is None:
        return "unscored"
    return "correct" if score.value >= 1.0 else "incorrect"


def _image(transcript: Transcript, image_id: str) -> str:
    try:
        data = transcript.image_bytes(image_id)
        record = transcript.image(image_id)
    except (KeyError, TranscriptFormatError) as exc:
        return f'<figure class="missing"><figcaption>{_esc(image_id)}: {_esc(exc)}</figcaption></figure>'
    uri = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
    return (
        f'<figure><img alt="{_esc(image_id)}" src="{uri}"><figcaption>{_esc(image_id)} '
        f"({record.width}×{record.height}, {_esc(record.origin)})</figcaption></figure>"
    )


def _images(transcript: Transcript, ids: Sequence[str]) -> str:
    if not ids:
        return ""
    return '<div class="images">' + "".join(_image(transcript, i) for i in ids) + "</div>"


def _verdict(score: Score | None) -> str:
    verdict = verdict_of(score)
    parts = [f'<div id="verdict" class="verdict"><span class="badge {verdict}">{verdict}</span>']
    if score is not None:
        parts.append(
            f' <span class="meta">judge {_esc(score.judge_model)}'
            + (f", prompt {_esc((score.prompt_sha256 or '')[:12])}" if score.prompt_sha256 else "")
            + (" (rule-based fallback: judge unavailable)" if score.fallback else "")
            + "</span>"
        )
        if score.explanation:
            parts.append(f'<div class="meta">{_esc(score.explanation)}</div>')
        if score.raw_output:
            parts.append(
                f"<details><summary>raw judge reply</summary><pre>{_esc(score.raw_output)}</pre></details>"
            )
    parts.append("</div>")
    return "".join(parts)


def _step(transcript: Transcript, step) -> str:
    action = step.action
    classes = ["step", action.kind.replace("_", "-")]
    if action.kind == "answer":
        classes.append("answer")
    if step.error:
        classes.append("error")
    fatal = transcript.fatal_step_index
    if fatal is not None and step.index > fatal:
        classes.append("after-fatal")
    badges = [f'<strong>Step {step.index}</strong> <span class="meta">{_esc(action.kind)}</span>']
    if step.error:
        badges.append(f'<span class="badge err">error: {_esc(step.error_category)}</span>')
    if fatal is not None and step.index == fatal:
        badges.append('<span class="badge fatal">fatal cascade starts here</span>')
    if step.model_latency_s is not None:
        badges.append(
            f'<span class="meta">model {step.model_latency_s:.2f}s'
            + (f", tool {step.tool_latency_s:.2f}s" if step.tool_latency_s is not None else "")
            + "</span>"
        )
    out = [f'<section class="{" ".join(classes)}" data-step="{step.index}">', " ".join(badges)]
    if action.think:
        out.append(f'<div class="label">thinking</div><div class="think">{_esc(action.think)}</div>')
    if action.kind == "tool_call":
        args = json.dumps(action.arguments or {}, ensure_ascii=False, indent=1)
        out.append(
            f'<div class="label">tool call</div><pre class="tool-call">{_esc(action.tool)}({_esc(args)})</pre>'
        )
    elif action.kind == "answer":
        out.append(
            f'<div class="label">final answer</div><pre class="final-answer">{_esc(action.answer)}</pre>'
        )
    else:
        out.append(f'<div class="label">invalid turn: {_esc(action.invalid_reason)}</div>')
    if action.repairs:
        out.append(f'<div class="meta">repairs: {_esc(", ".join(action.repairs))}</div>')
    if step.observation is not None:
        out.append(
            f'<div class="label">observation</div><pre class="observation">{_esc(step.observation)}</pre>'
        )
    out.append(_images(transcript, step.observation_image_ids))
    out.append(f"<details><summary>raw model text</summary><pre>{_esc(step.model_text)}</pre></details>")
    out.append("</section>")
    return "".join(out)


def render_case(transcript: Transcript) -> str:
    """The HTML body fragment of one case (used inside the case page and the run page)."""
    task = transcript.task
    answers = ", ".join(task.answers) or "(none)"
    head = [
        f'<article class="case" id="case-{_esc(task.id)}">',
        f'<h2>{_esc(task.id)} <span class="meta">{_esc(task.benchmark or "")}</span></h2>',
        _verdict(transcript.scores.get("answer")),
        f'<div class="label">question</div><pre class="question">{_esc(task.question)}</pre>',
        f'<div class="meta">reference: {_esc(answers)}</div>',
        _images(transcript, task.image_ids),
        f'<div class="meta">termination: <strong>{_esc(transcript.termination)}</strong>'
        + (f" — {_esc(transcript.termination_detail)}" if transcript.termination_detail else "")
        + f"; {len(transcript.steps)} steps"
        + (f"; wall time {transcript.wall_time_s:.2f}s" if transcript.wall_time_s is not None else "")
        + "</div>",
    ]
    process = transcript.scores.get("process")
    if process is not None:
        head.append(
            f'<div class="meta">process score: {_esc(process.value)} ({_esc(process.explanation)})</div>'
        )
    if transcript.system_prompt:
        head.append(
            f"<details><summary>system prompt</summary><pre>{_esc(transcript.system_prompt)}</pre></details>"
        )
    steps = [_step(transcript, s) for s in transcript.steps]
    return "".join(head + steps + ["</article>"])


def _summary_table(report: dict) -> str:
    rows = [
        ("benchmark", report["benchmark"]),
        ("model", report["model"]),
        ("status", report["status"]),
        ("cases", report["cases"]),
        ("Pass@1", "–" if report["pass_at_1"] is None else f"{100 * report['pass_at_1']:.1f}%"),
        (
            "correct / incorrect / unscored",
            f"{report['correct']} / {report['incorrect']} / {report['unscored']}",
        ),
        ("terminations", ", ".join(f"{k}: {v}" for k, v in report["terminations"].items())),
        ("fatal cascades", report["fatal"]["episodes"]),
        (
            "tool calls",
            ", ".join(f"{k}: {v['calls']} ({v['errors']} errors)" for k, v in report["tools"].items())
            or "none",
        ),
        (
            "fetch success (visit)",
            "–" if report["fetch_success_rate"] is None else f"{100 * report['fetch_success_rate']:.1f}%",
        ),
        (
            "judge",
            ", ".join(f"{j['model']} (prompt {j['prompt_sha256'] or '-'})" for j in report["judge"]) or "–",
        ),
    ]
    return (
        '<table id="summary">'
        + "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in rows)
        + "</table>"
    )


def render_run(
    report: dict, transcripts: Sequence[Transcript], *, inline: bool, case_href: str = "cases/"
) -> str:
    """The full HTML page of a run: summary, case table, and (``inline``) every case."""
    rows = []
    for t in transcripts:
        verdict = verdict_of(t.scores.get("answer"))
        link = f'<a href="{_esc(case_href + case_filename(t.task.id)[:-5] + ".html")}">{_esc(t.task.id)}</a>'
        rows.append(
            f'<tr class="case-row" data-verdict="{verdict}"><td>{link}</td>'
            f'<td><span class="badge {verdict}">{verdict}</span></td><td>{_esc(t.termination)}</td>'
            f"<td>{len(t.steps)}</td><td>{_esc((t.final_answer or '')[:120])}</td></tr>"
        )
    body = [
        f"<h1>Run: {_esc(report['benchmark'])} — {_esc(report['model'])}</h1>",
        _summary_table(report),
        '<div class="filter"><label><input type="checkbox" id="only-wrong"> hide correct cases</label></div>',
        '<table id="cases"><tr><th>case</th><th>verdict</th><th>termination</th><th>steps</th>'
        "<th>final answer</th></tr>" + "".join(rows) + "</table>",
    ]
    if inline:
        body += ["<h2>Trajectories</h2>"] + [render_case(t) for t in transcripts]
    return _page(f"{report['benchmark']} — {report['model']}", "".join(body))


def write_viewer(run_dir: str | Path, out_dir: str | Path | None = None) -> Path:
    """Write ``viewer/index.html`` and ``viewer/cases/<case>.html`` for a run folder; returns the index path."""
    log = RunLog(run_dir)
    out = Path(out_dir) if out_dir is not None else log.root / "viewer"
    report = build_report(run_dir)
    transcripts = list(log.transcripts())
    for t in transcripts:
        page = _page(
            f"{t.task.id} — {report['benchmark']}",
            '<p><a href="../index.html">← run</a></p>' + render_case(t),
        )
        atomic_write_bytes(out / "cases" / (case_filename(t.task.id)[:-5] + ".html"), page.encode("utf-8"))
    index = out / "index.html"
    atomic_write_bytes(
        index, render_run(report, transcripts, inline=len(transcripts) <= _INLINE_LIMIT).encode("utf-8")
    )
    return index
