"""`opensearch-vl`: the command line, thin over the library.

Each command group lives in its own module ``opensearch_vl/cli/<group>.py`` that defines
``register(subparsers)``; this file discovers them, so adding a group touches nothing here.

Example:
    $ opensearch-vl tools list
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from opensearch_vl import __version__
from opensearch_vl.errors import OpenSearchVLError


def build_parser() -> argparse.ArgumentParser:
    """Build the full argument parser from every command-group module."""
    parser = argparse.ArgumentParser(prog="opensearch-vl", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"opensearch-vl {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    package = importlib.import_module("opensearch_vl.cli")
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name in ("main",) or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"opensearch_vl.cli.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the CLI. Example: ``main(["tools", "list"])`` prints the tool schemas and returns 0."""
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args) or 0)
    except OpenSearchVLError as exc:
        print(f"opensearch-vl: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
