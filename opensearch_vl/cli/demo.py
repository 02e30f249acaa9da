"""`opensearch-vl demo`: the main job's evaluation: the bundled mini-benchmark with offline tools.

Example:
    $ opensearch-vl demo --out runs/demo                       # oracle + the tiny local model
    $ opensearch-vl demo --out runs/demo --model http://127.0.0.1:30000/v1 --model-name opensearch-vl-8b
"""

from __future__ import annotations

import argparse

__all__ = ["register"]


def _demo(args: argparse.Namespace) -> int:
    from opensearch_vl.cli.eval import judge_config_from_args
    from opensearch_vl.eval.demo import run_demo
    from opensearch_vl.eval.report import render_markdown

    result = run_demo(
        args.out,
        model=args.model,
        model_name=args.model_name,
        judge=judge_config_from_args(args),
        max_turns=args.max_turns,
        max_tokens=args.max_tokens,
        cache_mode=args.cache,
        progress=not args.no_progress,
    )
    print(render_markdown(result.reports).split("\n\n")[1])
    print(f"report: {result.out / 'report.md'}\nviewer: {result.index}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``demo`` command."""
    from opensearch_vl.cli.eval import add_judge_arguments

    parser = subparsers.add_parser(
        "demo", help="evaluate the oracle and a model on the bundled mini-benchmark"
    )
    parser.add_argument("--out", default="runs/demo", help="output folder (default runs/demo)")
    parser.add_argument("--model", help="endpoint URL or checkpoint folder (default: a tiny local Qwen3-VL)")
    parser.add_argument("--model-name", help="model name for an endpoint")
    parser.add_argument("--max-turns", type=int, default=6, help="turn limit of the model run (default 6)")
    parser.add_argument(
        "--max-tokens", type=int, default=96, help="tokens per turn of the model run (default 96)"
    )
    parser.add_argument("--cache", choices=["off", "read_write", "replay"], default="read_write")
    parser.add_argument("--no-progress", action="store_true")
    add_judge_arguments(parser)
    parser.set_defaults(func=_demo)
