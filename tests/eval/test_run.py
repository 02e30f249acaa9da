"""Runs: one transcript per case, resume, a kill at any moment loses nothing, re-judging, Ray fan-out."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from chat_server import ChatServer, Reply
from fixtures import answering_responder, write_bc_vl
from opensearch_vl.eval.chat_client import EndpointConfig
from opensearch_vl.eval.judge import JudgeConfig
from opensearch_vl.eval.rejudge import rejudge
from opensearch_vl.eval.run import EvalRunConfig, run_eval
from opensearch_vl.eval.run_log import RunLog
from opensearch_vl.tools_env.transcript import Transcript

from opensearch_vl.cli.main import main
from opensearch_vl.errors import ConfigError


def _script(tmp_path, n):
    path = tmp_path / "script.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"l1-{i}",
                    "turns": [f"<think>t</think><response>{'wrong' if i % 3 == 0 else f'ans{i}'}</response>"],
                }
            )
            + "\n"
            for i in range(n)
        )
    )
    return path


def _config(tmp_path, model, out="run", **kw):
    return EvalRunConfig(
        benchmark="browsecomp_vl",
        data=str(tmp_path / "bc" / "bc_vl_level1.jsonl"),
        model=model,
        out=str(tmp_path / out),
        tools=[],
        cache_mode="off",
        **kw,
    )


def _outcome(run_dir):
    return {
        t.task.id: (t.final_answer, t.termination, t.scores["answer"].value)
        for t in RunLog(run_dir).transcripts()
    }


def test_run_writes_header_and_cases_then_resume_skips(tmp_path):
    write_bc_vl(tmp_path / "bc", 6)
    model = f"scripted:{_script(tmp_path, 6)}"
    summary = run_eval(_config(tmp_path, model, limit=4), progress=False)
    assert (summary.total, summary.ran, summary.correct) == (4, 4, 2)
    log = RunLog(tmp_path / "run")
    header = log.read_header()
    assert header.status == "success" and header.counts["finished"] == 4
    assert header.environment["packages"]["opensearch-vl"] and "python" in header.environment
    assert header.seeds == {"seed": 0, "sampling_seed": 0} and header.judge["answer"]["model"] == "rule-match"
    t = Transcript.load(log.case_path("l1-1"))
    assert t.policy["kind"] == "scripted" and t.task.image_ids == ["img_1"] and t.image_bytes("img_1")
    again = run_eval(_config(tmp_path, model), progress=False)  # no limit now: runs the 2 missing only
    assert (again.skipped, again.ran) == (4, 2)
    assert len(log.case_files()) == 6 and len(log.read_header().history) == 2
    with pytest.raises(ConfigError, match="use another --out"):
        run_eval(_config(tmp_path, "scripted:other.jsonl"), progress=False)


def test_kill_at_any_moment_loses_nothing_and_resume_matches_a_clean_run(tmp_path):
    n = 24
    write_bc_vl(tmp_path / "bc", n)
    with ChatServer(answering_responder(delay_s=0.15)) as server:
        cmd = [
            sys.executable,
            "-m",
            "opensearch_vl.cli.main",
            "eval",
            "run",
            "--benchmark",
            "browsecomp_vl",
            "--data",
            str(tmp_path / "bc" / "bc_vl_level1.jsonl"),
            "--model",
            server.base_url,
            "--out",
            str(tmp_path / "killed"),
            "--tools",
            "",
            "--cache",
            "off",
            "--concurrency",
            "2",
            "--no-progress",
            "--no-report",
        ]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        log = RunLog(tmp_path / "killed")
        deadline = time.time() + 60
        while len(log.case_files()) < 5 and time.time() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        before = {p.name: p.read_bytes() for p in log.case_files()}
        assert 5 <= len(before) < n, "the kill should land mid-run"
        for path in log.case_files():  # every file on disk is complete
            Transcript.load(path)
        assert log.read_header().status == "started"
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        clean = subprocess.run(
            [*cmd[: cmd.index("--out") + 1], str(tmp_path / "clean"), *cmd[cmd.index("--out") + 2 :]],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert clean.returncode == 0, clean.stderr
    after = {p.name: p.read_bytes() for p in log.case_files()}
    assert len(after) == n
    assert all(after[name] == data for name, data in before.items()), "finished cases must not be re-run"
    assert _outcome(tmp_path / "killed") == _outcome(tmp_path / "clean")
    assert log.read_header().status == "success"


def test_rejudge_with_an_endpoint_judge_records_identity(tmp_path, chat_server):
    write_bc_vl(tmp_path / "bc", 3)
    run_eval(_config(tmp_path, f"scripted:{_script(tmp_path, 3)}"), progress=False)
    chat_server.replies = [Reply("reasoning: fine\ncorrect: yes")]
    cfg = JudgeConfig(endpoint=EndpointConfig(base_url=chat_server.base_url, model="local-judge"))
    counts = rejudge(tmp_path / "run", cfg)
    assert counts == {"cases": 3, "correct": 3, "unscored": 0}
    log = RunLog(tmp_path / "run")
    assert log.read_header().judge["answer"]["model"] == "local-judge"
    assert {t.scores["answer"].judge_model for t in log.transcripts()} == {"local-judge"}
    chat_server.replies = [Reply("no idea")]
    assert rejudge(tmp_path / "run", cfg)["unscored"] == 3


def test_cli_run_report_and_judge(tmp_path, capsys, chat_server):
    write_bc_vl(tmp_path / "bc", 3)
    script = _script(tmp_path, 3)
    out = tmp_path / "cli"
    assert (
        main(
            [
                "eval",
                "run",
                "--benchmark",
                "browsecomp_vl",
                "--data",
                str(tmp_path / "bc"),
                "--model",
                f"scripted:{script}",
                "--out",
                str(out),
                "--tools",
                "",
                "--cache",
                "off",
                "--no-progress",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert (
        "| browsecomp_vl |" in printed
        and (out / "report.md").is_file()
        and (out / "viewer" / "index.html").is_file()
    )
    chat_server.replies = [Reply("correct: no")]
    assert main(["eval", "judge", str(out), "--judge-url", chat_server.base_url, "--judge-model", "j"]) == 0
    assert main(["eval", "report", str(out), "--json", "--no-viewer"]) == 0
    report = json.loads(capsys.readouterr().out.split("\n", 1)[1])[0]
    assert report["correct"] == 0 and report["judge"][0]["model"] == "j"
    assert main(["eval", "run", "--benchmark", "nope", "--model", "x", "--out", str(tmp_path / "n")]) == 1


@pytest.mark.slow
def test_ray_fanout_gives_the_same_results_as_local(tmp_path):
    pytest.importorskip("ray")
    write_bc_vl(tmp_path / "bc", 6)
    model = f"scripted:{_script(tmp_path, 6)}"
    run_eval(_config(tmp_path, model, out="local"), progress=False)
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    import ray

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        run_eval(_config(tmp_path, model, out="ray", ray=True, ray_workers=1), progress=False)
    finally:
        ray.shutdown()
    assert _outcome(tmp_path / "ray") == _outcome(tmp_path / "local")
    local = Transcript.load(RunLog(tmp_path / "local").case_path("l1-2"))
    remote = Transcript.load(RunLog(tmp_path / "ray").case_path("l1-2"))
    assert remote.steps[0].model_text == local.steps[0].model_text and remote.images == local.images
