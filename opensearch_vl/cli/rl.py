"""`opensearch-vl rl`: prepare RL data, run the RL stage in miniature.

Example:
    $ opensearch-vl rl prepare rl.parquet --out data/rl --register searchvl-rl
    $ opensearch-vl rl demo --out runs/rl-demo
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
from pathlib import Path

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``rl`` command group."""
    parser = subparsers.add_parser("rl", help="RL data preparation and the RL demo")
    sub = parser.add_subparsers(dest="rl_command", metavar="SUBCOMMAND")

    prep = sub.add_parser(
        "prepare", help="RL parquet/JSONL → rLLM rows (+ DatasetRegistry) and a verl RL parquet"
    )
    prep.add_argument("input", help="RL .parquet or .jsonl with question, answer, image(s)")
    prep.add_argument("--out", required=True, help="output folder (images/, rllm/, verl/)")
    prep.add_argument(
        "--test-fraction", type=float, default=0.1, help="share of rows in the test split (0.1)"
    )
    prep.add_argument("--seed", type=int, default=42, help="shuffle seed of the split (42)")
    prep.add_argument("--data-source", default="searchvl_rl", help="verl data_source column")
    prep.add_argument("--max-rows", type=int, default=None, help="read at most this many rows")
    prep.add_argument("--skip-bad", action="store_true", help="leave out rows whose images do not decode")
    prep.add_argument(
        "--register",
        metavar="NAME",
        default=None,
        help="also register the splits with rLLM's DatasetRegistry under NAME (needs rLLM)",
    )
    prep.set_defaults(func=_prepare)

    demo = sub.add_parser(
        "demo", help="rollouts + Eq. 9 rewards + fatal_grpo advantages on the mini benchmark"
    )
    demo.add_argument("--out", required=True, help="output folder (transcripts, table)")
    demo.add_argument("--model", default=None, help="local Qwen3-VL folder for the processor (default: tiny)")
    demo.add_argument("--tasks", type=int, default=3, help="mini-benchmark tasks (3)")
    demo.add_argument(
        "--model-rollouts",
        type=int,
        default=2,
        help="rollouts per task sampled from --model (2; 0: scripted only)",
    )
    demo.set_defaults(func=_demo)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)


def _prepare(args: argparse.Namespace) -> int:
    from opensearch_vl.errors import PrerequisiteError
    from opensearch_vl.rl.prepare import prepare_rl_data

    report = prepare_rl_data(
        args.input,
        args.out,
        test_fraction=args.test_fraction,
        seed=args.seed,
        data_source=args.data_source,
        max_rows=args.max_rows,
        skip_bad=args.skip_bad,
    )
    summary = {
        "counts": report.counts,
        "images": report.images,
        "skipped": report.skipped,
        "rllm": {k: str(v) for k, v in report.rllm_files.items()},
        "verl": {k: str(v) for k, v in report.verl_files.items()},
    }
    if args.register:
        if importlib.util.find_spec("rllm") is None:
            raise PrerequisiteError(
                "--register needs rLLM: pip install --no-deps -e <checkout of rllm-org/rllm>; "
                f"the JSONL rows are in {Path(args.out) / 'rllm'} meanwhile"
            )
        from opensearch_vl.plugins.rllm.dataset import register_rllm_dataset

        summary["registered"] = register_rllm_dataset(args.register, report.rllm_files)
    print(json.dumps(summary, indent=1))
    return 0


def _demo(args: argparse.Namespace) -> int:
    from opensearch_vl.plugins.verl.agent_loop import fatal_advantages
    from opensearch_vl.rl.demo import run_demo

    result = asyncio.run(
        run_demo(
            args.out,
            advantage_fn=fatal_advantages,
            model_dir=args.model,
            tasks=args.tasks,
            model_rollouts=args.model_rollouts,
        )
    )
    print(result.table())
    print(f"\nrl demo: {len(result.rows)} rollouts; table and transcripts in {result.out_dir}")
    return 0
