"""Build the tiny random Qwen3-VL used by the smoke recipe and the tests (no Hugging Face Hub needed).

Usage:
    python scripts/build_tiny_qwen3vl.py runs/tiny-qwen3vl [--seed 0]
"""

import argparse
import sys

from opensearch_vl.sft.tiny_model import build_tiny_qwen3vl


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "out_dir", nargs="?", default="runs/tiny-qwen3vl", help="where to write the checkpoint"
    )
    parser.add_argument("--seed", type=int, default=0, help="weight-initialisation seed")
    args = parser.parse_args(argv)
    print(build_tiny_qwen3vl(args.out_dir, seed=args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
