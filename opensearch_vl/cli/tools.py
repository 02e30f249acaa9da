"""`opensearch-vl tools`: list the tool schemas, or call one tool by hand.

Examples:
    $ opensearch-vl tools list
    $ opensearch-vl tools call crop --args '{"image": "img_1", "x": 0, "y": 0, "width": 64, "height": 64}' \\
          --image photo.jpg --out crops/

``call`` prints the observation as JSON (``text``, ``error``, ``category``, ``image_ids``, the written image
files, the tool's ``info``) and exits 0 on success, 1 when the call ended in an error observation. The
``--image`` files become ``img_1``, ``img_2``… in the order given; their folders are allowed as image roots.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from opensearch_vl.errors import ConfigError, OpenSearchVLError

__all__ = ["register", "list_tools", "call_tool"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``tools`` command group to the ``opensearch-vl`` parser."""
    parser = subparsers.add_parser(
        "tools", help="list the tools' schemas or call a tool", description=__doc__.split("\n\n")[0]
    )
    commands = parser.add_subparsers(dest="tools_command", metavar="SUBCOMMAND")
    parser.set_defaults(func=lambda args: _help(parser))

    listing = commands.add_parser("list", help="print the OpenAI function schemas of the configured tools")
    listing.add_argument("--config", help="tool environment YAML (ToolEnvConfig); default: offline defaults")
    listing.add_argument("--names", action="store_true", help="print only the tool names, one per line")
    listing.set_defaults(func=_run_list)

    call = commands.add_parser("call", help="call one tool and print its observation as JSON")
    call.add_argument("name", help="tool name, e.g. crop (see `opensearch-vl tools list --names`)")
    call.add_argument("--args", default="{}", help="the tool arguments as a JSON object (default: {})")
    call.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="PATH",
        help="an input image; repeat for several (they become img_1, img_2, …)",
    )
    call.add_argument("--out", metavar="DIR", help="write the images the tool produced here as <id>.png")
    call.add_argument("--config", help="tool environment YAML (ToolEnvConfig); default: offline defaults")
    call.set_defaults(func=_run_call)


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _load_config(path: str | None) -> Any:
    from opensearch_vl.tools_env.config import ToolEnvConfig

    return ToolEnvConfig.from_yaml(path) if path else ToolEnvConfig()


def list_tools(config: Any = None) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Schemas of the configured tools that can be built, and the error of each one that cannot.

    Example:
        >>> schemas, problems = list_tools()  # doctest: +SKIP
        >>> schemas[0]["function"]["name"]  # doctest: +SKIP
        'crop'
    """
    from opensearch_vl.tools_env.config import ToolEnvConfig
    from opensearch_vl.tools_env.environment import ToolEnvironment

    config = config or ToolEnvConfig()
    schemas, problems = [], {}
    for name in config.tools:
        try:
            env = ToolEnvironment(config.model_copy(update={"tools": [name]}))
        except OpenSearchVLError as exc:
            problems[name] = str(exc)
            continue
        schemas.extend(env.openai_tools())
        asyncio.run(env.aclose())
    return schemas, problems


def _run_list(args: argparse.Namespace) -> int:
    schemas, problems = list_tools(_load_config(args.config))
    if args.names:
        print("\n".join(s["function"]["name"] for s in schemas))
    else:
        print(json.dumps(schemas, indent=2, ensure_ascii=False))
    for name, problem in problems.items():
        print(f"opensearch-vl: {name} is unavailable: {problem}", file=sys.stderr)
    return 1 if problems else 0


async def call_tool(
    name: str, arguments: Any, images: list[str], *, config: Any = None, out: str | Path | None = None
) -> dict[str, Any]:
    """Call one tool on the given image files and return the observation as a JSON-ready dict.

    Example:
        >>> asyncio.run(call_tool("sharpen", {"image": "img_1"}, ["photo.jpg"], out="out/"))  # doctest: +SKIP
        {'tool': 'sharpen', 'text': '…', 'error': False, 'category': None, 'image_ids': ['img_2'], …}
    """
    from opensearch_vl.tools_env.config import ToolEnvConfig
    from opensearch_vl.tools_env.environment import ToolEnvironment

    config = config or ToolEnvConfig()
    roots = list(config.image_roots) + sorted({str(Path(p).resolve().parent) for p in images})
    env = ToolEnvironment(config.model_copy(update={"tools": [name], "image_roots": roots}))
    try:
        store = env.new_store()
        for path in images:
            store.add(str(Path(path).resolve()))
        outcome = await env.execute(name, arguments, store)
    finally:
        await env.aclose()
    written = []
    for image_id in outcome.image_ids:
        record = store.record(image_id)
        entry: dict[str, Any] = {"id": image_id, "width": record.image.width, "height": record.image.height}
        if out is not None:
            target = Path(out) / f"{image_id}.png"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(record.png)
            entry["path"] = str(target)
        written.append(entry)
    return {
        "tool": name,
        "arguments": outcome.arguments,
        "text": outcome.text,
        "error": outcome.error,
        "category": outcome.category,
        "image_ids": list(outcome.image_ids),
        "images": written,
        "info": outcome.info,
        "latency_s": round(outcome.latency_s, 6),
    }


def _run_call(args: argparse.Namespace) -> int:
    try:
        arguments = json.loads(args.args)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f'--args is not valid JSON ({exc}); give an object such as \'{{"image": "img_1"}}\''
        )
    result = asyncio.run(
        call_tool(args.name, arguments, args.image, config=_load_config(args.config), out=args.out)
    )
    print(json.dumps(result, indent=2, ensure_ascii=False, default=str))
    return 1 if result["error"] else 0
