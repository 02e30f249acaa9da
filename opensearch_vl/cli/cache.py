"""`opensearch-vl cache`: inspect a record/replay cache file.

Example:
    $ opensearch-vl cache stats runs/tool_cache.sqlite
"""

from __future__ import annotations

import argparse
import json

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``cache`` command group to the ``opensearch-vl`` parser."""
    parser = subparsers.add_parser(
        "cache", help="inspect the tool result cache", description=__doc__.split("\n\n")[0]
    )
    commands = parser.add_subparsers(dest="cache_command", metavar="SUBCOMMAND")
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])

    stats = commands.add_parser("stats", help="entries, size and recorded hits/misses per tool and backend")
    stats.add_argument("path", help="the cache's SQLite file (cache.path in the tool config)")
    stats.set_defaults(func=_stats)


def _stats(args: argparse.Namespace) -> int:
    from opensearch_vl.tools_env.cache import file_summary

    print(json.dumps(file_summary(args.path), indent=2))
    return 0
