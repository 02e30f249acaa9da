"""layout_parsing: the text of an image as blocks in reading order (local RapidOCR or remote PP-StructureV3).

Example:
    >>> from opensearch_vl.tools_env.backends.ocr import Block
    >>> print(format_blocks("img_1", [Block("text", "HELLO", (0, 0, 5, 5), 1)]).splitlines()[0])
    Layout parsing of img_1: 1 text block detected.
"""

from __future__ import annotations

from typing import Any

from opensearch_vl.tools_env.backends.assembly import cached, http_client
from opensearch_vl.tools_env.backends.ocr import (
    Block,
    RapidOcrEngine,
    RemoteLayoutParser,
    blocks_from_layout_response,
    layout_token,
)
from opensearch_vl.tools_env.config import ToolEnvConfig
from opensearch_vl.tools_env.images import ImageStore
from opensearch_vl.tools_env.tool import FunctionTool, ToolResult, ToolSpec, register_tool

from opensearch_vl.errors import ConfigError

__all__ = ["LAYOUT_PARSING", "LayoutParsingTool", "format_blocks"]

LAYOUT_PARSING = ToolSpec(
    name="layout_parsing",
    description="Read all text in an image (OCR with layout): returns the text blocks in reading order, e.g. "
    "for documents, receipts, signs, charts and screenshots. Crop first to read small regions.",
    parameters={
        "type": "object",
        "properties": {
            "image": {"type": "string", "description": 'Image id to read, e.g. "img_1" (default img_1).'},
            "use_chart_recognition": {
                "type": "boolean",
                "default": False,
                "description": "Also parse charts (remote backend only).",
            },
            "use_doc_orientation_classify": {
                "type": "boolean",
                "default": False,
                "description": "Detect rotated pages first (remote backend only).",
            },
        },
        "required": [],
    },
)

_RULE = "=" * 40


def format_blocks(ref: str, blocks: list[Block]) -> str:
    """The observation text: a count, each block labelled, then all text joined in reading order."""
    if not blocks:
        return f"Layout parsing of {ref}: no text was found."
    noun = "block" if len(blocks) == 1 else "blocks"
    lines = [f"Layout parsing of {ref}: {len(blocks)} text {noun} detected.", ""]
    for block in blocks:
        lines.append(f"[Text Block {block.order}] ({block.label}, box {list(block.bbox)})")
        lines.append(block.content)
    lines += ["", _RULE, "ALL RECOGNIZED TEXT:", "\n".join(b.content for b in blocks), _RULE]
    return "\n".join(lines)


class LayoutParsingTool:
    """Runs the configured OCR backend on a stored image."""

    def __init__(self, config: ToolEnvConfig, cache: Any = None) -> None:
        settings = config.layout
        self.settings = settings
        if settings.backend == "remote":
            if not settings.api_url:
                raise ConfigError(
                    "layout.backend is 'remote' but no endpoint is set; export "
                    "LAYOUT_PARSING_API_URL=<PP-StructureV3 /layout-parsing URL> or set layout.api_url"
                )
            remote = RemoteLayoutParser(
                http_client(config), api_url=settings.api_url, token=layout_token(settings.token_env)
            )
            self.remote = cached(remote, cache, "layout_parsing")
            self.local = None
        else:
            self.remote = None
            self.local = RapidOcrEngine(min_confidence=settings.min_confidence)

    def __call__(self, arguments: dict[str, Any], store: ImageStore) -> ToolResult:
        ref = arguments.get("image") or arguments.get("file_path") or "img_1"
        record = store.record(ref)
        if self.remote is not None:
            response = self.remote.call(
                {
                    "file": record.png,
                    "fileType": 1,
                    "useDocOrientationClassify": bool(arguments.get("use_doc_orientation_classify", False)),
                    "useDocUnwarping": False,
                    "useChartRecognition": bool(arguments.get("use_chart_recognition", False)),
                }
            )
            blocks = blocks_from_layout_response(response, keep_labels=self.settings.keep_labels)
            backend = "pp_structure_v3"
        else:
            blocks = self.local.parse(record.image)
            backend = "rapidocr"
        return ToolResult(
            text=format_blocks(record.id, blocks), info={"backend": backend, "blocks": len(blocks)}
        )


@register_tool("layout_parsing")
def make_layout_parsing(config: ToolEnvConfig, cache: Any = None) -> FunctionTool:
    """The layout_parsing tool with the configured backend."""
    return FunctionTool(LAYOUT_PARSING, LayoutParsingTool(config, cache))
