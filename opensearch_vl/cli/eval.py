"""`opensearch-vl eval …`: run benchmarks, re-judge runs, write reports and the HTML viewer.

Example:
    $ opensearch-vl eval run --benchmark fvqa --data fvqa_test.parquet --model http://127.0.0.1:30000/v1 \\
          --model-name opensearch-vl-8b --out runs/fvqa-8b --judge-url http://127.0.0.1:8001/v1 --judge-model qwen
    $ opensearch-vl eval judge runs/fvqa-8b --judge-url https://api.openai.com/v1 --judge-model gpt-4o
    $ opensearch-vl eval report runs/fvqa-8b runs/simplevqa-8b
    $ opensearch-vl eval view runs/fvqa-8b
"""

from __future__ import annotations

import argparse
import json
from typing import Any

__all__ = ["register", "judge_config_from_args", "add_judge_arguments"]


def _options(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise SystemExit(f"--option {pair!r}: expected key=value")
        key, value = pair.split("=", 1)
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def add_judge_arguments(parser: argparse.ArgumentParser) -> None:
    """The judge flags shared by ``eval run``, ``eval judge`` and ``demo``."""
    group = parser.add_argument_group("judge")
    group.add_argument(
        "--judge-url", help="OpenAI-compatible judge endpoint (…/v1); omitted: rule-based matching"
    )
    group.add_argument("--judge-model", default="gpt-4o", help="judge model name (default: gpt-4o)")
    group.add_argument(
        "--judge-api-key-env",
        default="OPENAI_API_KEY",
        help="environment variable holding the judge's API key",
    )
    group.add_argument(
        "--judge-fallback",
        choices=["rule", "unscored"],
        default="rule",
        help="when the judge endpoint is down: rule-based fallback (marked) or unscored",
    )
    group.add_argument("--process-judge", action="store_true", help="also score the search process (0-1)")


def judge_config_from_args(args: argparse.Namespace):
    """A :class:`~opensearch_vl.eval.judge.JudgeConfig` from the judge flags."""
    from opensearch_vl.eval.chat_client import EndpointConfig
    from opensearch_vl.eval.judge import JudgeConfig

    endpoint = None
    if args.judge_url:
        endpoint = EndpointConfig(
            base_url=args.judge_url, model=args.judge_model, api_key_env=args.judge_api_key_env
        )
    return JudgeConfig(endpoint=endpoint, fallback=args.judge_fallback)


def _run(args: argparse.Namespace) -> int:
    from opensearch_vl.eval.policies import SamplingConfig
    from opensearch_vl.eval.report import render_markdown, write_report
    from opensearch_vl.eval.run import EvalRunConfig, run_eval
    from opensearch_vl.eval.viewer import write_viewer

    sampling = SamplingConfig(temperature=args.temperature, top_p=args.top_p, max_tokens=args.max_tokens)
    config = EvalRunConfig(
        benchmark=args.benchmark,
        data=args.data,
        data_options=_options(args.option),
        model=args.model,
        model_name=args.model_name,
        out=args.out,
        limit=args.limit,
        concurrency=args.concurrency,
        max_turns=args.max_turns,
        tools=[t for t in args.tools.split(",") if t.strip()] if args.tools is not None else None,
        tool_config=args.tool_config,
        cache_mode=args.cache,
        cache_path=args.cache_path,
        sampling=sampling,
        judge=judge_config_from_args(args),
        process_judge=args.process_judge,
        device_map=args.device_map,
        seed=args.seed,
        ray=args.ray,
        ray_address=args.ray_address,
    )
    summary = run_eval(config, progress=not args.no_progress)
    print(f"{summary.ran} cases run, {summary.skipped} already done; wrote {summary.out}")
    if not args.no_report:
        report = write_report(summary.out)
        index = write_viewer(summary.out)
        print(render_markdown([report]).split("\n\n")[1])
        print(f"report: {summary.out / 'report.md'}\nviewer: {index}")
    return 0


def _judge(args: argparse.Namespace) -> int:
    from opensearch_vl.eval.rejudge import rejudge

    counts = rejudge(
        args.run_dir, judge_config_from_args(args), process=args.process_judge, concurrency=args.concurrency
    )
    print(f"re-judged {counts['cases']} cases: {counts['correct']} correct, {counts['unscored']} unscored")
    return 0


def _report(args: argparse.Namespace) -> int:
    from opensearch_vl.eval.report import render_markdown, write_report
    from opensearch_vl.eval.viewer import write_viewer

    reports = [write_report(run) for run in args.run_dirs]
    if not args.no_viewer:
        for run in args.run_dirs:
            write_viewer(run)
    if args.json:
        print(json.dumps(reports, indent=1))
    else:
        print(render_markdown(reports))
    return 0


def _view(args: argparse.Namespace) -> int:
    from opensearch_vl.eval.viewer import write_viewer

    print(write_viewer(args.run_dir, args.out))
    return 0


def _list(args: argparse.Namespace) -> int:
    from opensearch_vl.eval.registry import available_benchmarks, get_benchmark

    for name in available_benchmarks():
        p = get_benchmark(name).profile
        print(f"{name:20s} turns={p.max_turns:<3d} judge={p.judge:4s} tools={','.join(p.tools)}")
        if p.notes:
            print(f"{'':20s} {p.notes}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``eval`` command group."""
    parser = subparsers.add_parser("eval", help="evaluate a policy on benchmarks; judge, report, view")
    sub = parser.add_subparsers(dest="eval_command", metavar="SUBCOMMAND")
    parser.set_defaults(func=lambda a: (parser.print_help(), 2)[1])

    run = sub.add_parser("run", help="run (or resume) a benchmark into a run folder")
    run.add_argument("--benchmark", required=True, help="benchmark name (see `opensearch-vl eval list`)")
    run.add_argument("--data", help="benchmark file or folder in its published format (not needed for mini)")
    run.add_argument(
        "--option",
        action="append",
        metavar="KEY=VALUE",
        help="loader option, e.g. language=EN (simplevqa), level=2 (browsecomp_vl)",
    )
    run.add_argument(
        "--model", required=True, help="http(s)://host:port/v1 endpoint, scripted:FILE, or a checkpoint"
    )
    run.add_argument("--model-name", help="model name sent to the endpoint")
    run.add_argument("--out", required=True, help="run folder; re-running the same command resumes it")
    run.add_argument("--limit", type=int, help="only the first N cases")
    run.add_argument("--concurrency", type=int, default=16, help="episodes in flight (default 16)")
    run.add_argument("--max-turns", type=int, help="override the benchmark's turn limit")
    run.add_argument("--tools", help="comma-separated tool list overriding the benchmark profile ('' = none)")
    run.add_argument("--tool-config", help="YAML tool-environment config (backends, keys, limits)")
    run.add_argument(
        "--cache",
        choices=["off", "read_write", "replay"],
        default="read_write",
        help="tool result cache; replay re-runs reproducibly from a recorded cache",
    )
    run.add_argument("--cache-path", help="cache file (default RUN_DIR/tool_cache.sqlite)")
    run.add_argument("--temperature", type=float, default=0.7)
    run.add_argument("--top-p", type=float, default=0.95)
    run.add_argument("--max-tokens", type=int, default=4096, help="completion tokens per turn")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--device-map", default="auto", help="local checkpoints: auto, cpu, cuda:0 …")
    run.add_argument("--ray", action="store_true", help="fan out over a Ray cluster")
    run.add_argument("--ray-address", help="Ray cluster address (default: start a local one)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument(
        "--no-report", action="store_true", help="skip writing report.md and the viewer at the end"
    )
    add_judge_arguments(run)
    run.set_defaults(func=_run)

    judge = sub.add_parser("judge", help="re-judge a run folder without re-running the episodes")
    judge.add_argument("run_dir")
    judge.add_argument("--concurrency", type=int, default=16)
    add_judge_arguments(judge)
    judge.set_defaults(func=_judge)

    report = sub.add_parser(
        "report", help="Pass@1 table and statistics (writes report.md/json and the viewer)"
    )
    report.add_argument("run_dirs", nargs="+")
    report.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    report.add_argument("--no-viewer", action="store_true", help="do not (re)write the HTML viewer")
    report.set_defaults(func=_report)

    view = sub.add_parser("view", help="write the static HTML viewer of a run")
    view.add_argument("run_dir")
    view.add_argument("--out", help="output folder (default RUN_DIR/viewer)")
    view.set_defaults(func=_view)

    lst = sub.add_parser("list", help="registered benchmarks and their profiles")
    lst.set_defaults(func=_list)
