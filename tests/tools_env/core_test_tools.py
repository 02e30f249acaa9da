"""Small real tools registered for the core tests (environment, runner, CLI), under ``core_*`` names.

They are real :class:`~opensearch_vl.tools_env.tool.Tool` objects built by registered factories, so the tests
go through the same registry, validation and execution path as the built-in tools.
"""

from __future__ import annotations

import asyncio
import time

from opensearch_vl.tools_env.tool import FunctionTool, ToolResult, ToolSpec, register_tool
from PIL import Image

from opensearch_vl.errors import ReplayMissError, ToolError

CORE_TOOLS = ["core_echo", "core_paint", "core_fail", "core_boom", "core_sleep", "core_replay", "core_block"]


def _spec(name: str, properties: dict, required: list[str], produces_images: bool = False) -> ToolSpec:
    return ToolSpec(
        name,
        f"Test tool {name}.",
        {"type": "object", "properties": properties, "required": required, "additionalProperties": False},
        produces_images,
    )


@register_tool("core_echo")
def make_echo(config, cache):
    def run(args, store):
        return ToolResult(text=args["text"] * args["repeat"], info={"repeat": args["repeat"]})

    return FunctionTool(
        _spec(
            "core_echo",
            {"text": {"type": "string"}, "repeat": {"type": "integer", "minimum": 1, "default": 1}},
            ["text"],
        ),
        run,
    )


@register_tool("core_paint")
def make_paint(config, cache):
    """Produces ``count`` images the size of ``image``, filled with a grey level (CPU work in a thread)."""

    def run(args, store):
        width, height = store.get(args["image"]).size
        return ToolResult(
            text=f"painted {args['count']}",
            images=[Image.new("RGB", (width, height), (args["level"],) * 3) for _ in range(args["count"])],
        )

    return FunctionTool(
        _spec(
            "core_paint",
            {
                "image": {"type": "string"},
                "level": {"type": "integer", "default": 128},
                "count": {"type": "integer", "minimum": 0, "default": 1},
            },
            ["image"],
            produces_images=True,
        ),
        run,
    )


@register_tool("core_fail")
def make_fail(config, cache):
    def run(args, store):
        raise ToolError(args["category"], f"failed on purpose: {args.get('why', 'no reason')}")

    return FunctionTool(
        _spec("core_fail", {"category": {"type": "string"}, "why": {"type": "string"}}, ["category"]), run
    )


@register_tool("core_boom")
def make_boom(config, cache):
    def run(args, store):
        raise RuntimeError("kaboom")

    return FunctionTool(_spec("core_boom", {}, []), run)


@register_tool("core_sleep")
def make_sleep(config, cache):
    async def run(args, store):
        await asyncio.sleep(args["seconds"])
        return ToolResult(text=f"slept {args['seconds']}")

    return FunctionTool(_spec("core_sleep", {"seconds": {"type": "number", "minimum": 0}}, ["seconds"]), run)


@register_tool("core_block")
def make_block(config, cache):
    """Blocks its worker thread (like a synchronous HTTP call or OpenCV)."""

    def run(args, store):
        time.sleep(args["seconds"])
        return ToolResult(text="done")

    return FunctionTool(_spec("core_block", {"seconds": {"type": "number", "minimum": 0}}, ["seconds"]), run)


@register_tool("core_replay")
def make_replay(config, cache):
    def run(args, store):
        raise ReplayMissError("core_replay: no recorded result for this call (cache.mode: replay)")

    return FunctionTool(_spec("core_replay", {}, []), run)
