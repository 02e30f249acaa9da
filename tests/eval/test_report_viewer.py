"""Report numbers from hand-built transcripts; the HTML viewer rendered in headless Chromium; the demo."""

import shutil
import subprocess

import pytest
from opensearch_vl.eval.report import build_report, render_markdown, summarize_transcripts
from opensearch_vl.eval.run_log import RunHeader, RunLog
from opensearch_vl.eval.viewer import write_viewer
from opensearch_vl.tools_env.images import png_bytes
from opensearch_vl.tools_env.transcript import Action, ImageRecord, Score, Step, TaskInfo, Transcript


def _call(i, tool, error=None):
    return Step(
        index=i,
        model_text=f"<think>step {i}</think><tool_call>…</tool_call>",
        action=Action(kind="tool_call", think=f"thinking {i}", tool=tool, arguments={"q": "x"}),
        observation=f"[tool error: {error}] failed" if error else "ok",
        error=bool(error),
        error_category=error,
    )


def _answer(i, text):
    return Step(index=i, model_text=f"<response>{text}</response>", action=Action(kind="answer", answer=text))


def _transcripts():
    from PIL import Image

    png = png_bytes(Image.new("RGB", (20, 10), (250, 0, 0)))
    import hashlib

    sha = hashlib.sha256(png).hexdigest()
    a = Transcript(
        task=TaskInfo(id="a", question="Q a?", answers=["x"], image_ids=["img_1"], benchmark="b"),
        steps=[_call(0, "visit"), _call(1, "text_search"), _answer(2, "x")],
        final_answer="x",
        termination="answer",
        scores={"answer": Score(value=1.0, judge_model="j", prompt_sha256="ab" * 32)},
        metrics={"well_formed_rate": 1.0},
        wall_time_s=2.0,
    )
    a.add_image(ImageRecord(id="img_1", sha256=sha, width=20, height=10, origin="task"), png)
    b = Transcript(
        task=TaskInfo(id="b", question="Q b?", answers=["y"], benchmark="b"),
        steps=[
            _call(0, "visit", "upstream_http"),
            _call(1, "visit", "timeout"),
            _call(2, "crop", "bad_arguments"),
        ],
        termination="fatal_cascade",
        fatal_step_index=0,
        scores={"answer": Score(value=0.0, judge_model="j", metadata={"no_answer": True})},
        wall_time_s=1.0,
    )
    c = Transcript(
        task=TaskInfo(id="c", question="Q c?", answers=["z"], benchmark="b"),
        steps=[_answer(0, "z?")],
        final_answer="z?",
        termination="answer",
        scores={"answer": Score(value=None, judge_model="j", prompt_sha256="ab" * 32, raw_output="hmm")},
    )
    d = Transcript(
        task=TaskInfo(id="d", question="Q d?", answers=["w"], benchmark="b"),
        steps=[_answer(0, "v")],
        final_answer="v",
        termination="answer",
        scores={"answer": Score(value=0.0, judge_model="rule-match", fallback=True)},
    )
    return [a, b, c, d]


def test_report_numbers_from_hand_built_transcripts():
    r = summarize_transcripts(_transcripts())
    assert (r["cases"], r["correct"], r["incorrect"], r["unscored"]) == (4, 1, 2, 1)
    assert r["pass_at_1"] == pytest.approx(1 / 3) and r["pass_at_1_all"] == 0.25
    assert r["terminations"] == {"answer": 3, "fatal_cascade": 1}
    assert r["fatal"] == {"episodes": 1, "rate": 0.25, "mean_fatal_step": 0}
    assert r["tools"] == {
        "visit": {"calls": 3, "errors": 2},
        "text_search": {"calls": 1, "errors": 0},
        "crop": {"calls": 1, "errors": 1},
    }
    assert r["fetch_success_rate"] == pytest.approx(1 / 3)
    assert r["error_categories"] == {"upstream_http": 1, "timeout": 1, "bad_arguments": 1}
    assert r["judge_fallbacks"] == 1 and r["mean_turns"] == 2.0 and r["mean_tool_calls"] == 1.25
    assert {(j["model"], j["verdicts"]) for j in r["judge"]} == {("j", 2), ("rule-match", 1)}


def _write_run(tmp_path):
    log = RunLog(tmp_path / "run")
    log.write_header(
        RunHeader(
            benchmark="b", config={"model": "m"}, policy={"model": "m"}, status="success", counts={"cases": 4}
        )
    )
    for t in _transcripts():
        log.save(t)
    return log


def test_build_report_and_markdown(tmp_path):
    log = _write_run(tmp_path)
    report = build_report(log.root)
    md = render_markdown([report])
    assert "| b | m | 4 | 33.3 | 1 | 1 | 3 | 25.0 | 33.3 |" in md
    assert "| fatal_cascade | 1 |" in md and "| visit | 3 | 2 |" in md


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _dump_dom(path):
    browser = _chromium()
    if browser is None:
        pytest.skip("headless Chromium not installed (Debian package: chromium)")
    out = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=3000",
            "--dump-dom",
            path.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_viewer_renders_in_headless_chromium(tmp_path):
    log = _write_run(tmp_path)
    index = write_viewer(log.root)
    dom = _dump_dom(index)
    assert 'data-state="done"' in dom and 'data-images-ok="1"' in dom and 'data-images-broken="0"' in dom
    assert 'data-steps="8"' in dom and 'data-error-steps="3"' in dom
    assert "fatal cascade starts here" in dom and "error: upstream_http" in dom
    case = _dump_dom(log.root / "viewer" / "cases" / "a.html")
    assert 'data-images-ok="1"' in case and "thinking 0" in case and "visit(" in case
    assert '<span class="badge correct">correct</span>' in case
    unscored = _dump_dom(log.root / "viewer" / "cases" / "c.html")
    assert '<span class="badge unscored">unscored</span>' in unscored and "hmm" in unscored
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            _chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--screenshot={shot}",
            "--window-size=1000,800",
            index.as_uri(),
        ],
        capture_output=True,
        timeout=90,
    )
    assert shot.is_file() and shot.stat().st_size > 5000


@pytest.mark.slow
def test_demo_runs_oracle_and_tiny_model_end_to_end(tmp_path):
    from opensearch_vl.eval.demo import run_demo

    result = run_demo(tmp_path / "demo", progress=False, max_turns=3, max_tokens=24)
    oracle, model = result.reports
    assert oracle["cases"] == 8 and oracle["pass_at_1"] == 1.0 and oracle["fetch_success_rate"] == 1.0
    assert model["cases"] == 8 and model["model"] == "tiny-qwen3vl"
    assert sum(model["terminations"].values()) == 8
    assert (tmp_path / "demo" / "report.md").is_file() and result.index.is_file()
    if _chromium():
        dom = _dump_dom(tmp_path / "demo" / "oracle" / "viewer" / "index.html")
        assert 'data-images-broken="0"' in dom and "image_search(" in dom
