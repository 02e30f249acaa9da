"""Text and layout from images: local RapidOCR, or a remote PP-StructureV3 ``/layout-parsing`` endpoint.

Both produce :class:`Block` lists in the PP-StructureV3 ``parsing_res_list`` shape (label, content, bbox,
order), so the tool's output is the same whichever runs. Local OCR detects text lines, groups the ones on the
same row, and orders rows top to bottom, words left to right; every block is labelled ``text`` (local OCR
has no layout model).

Example:
    >>> blocks = blocks_from_layout_response({"errorCode": 0, "result": {"layoutParsingResults": [
    ...     {"prunedResult": {"parsing_res_list": [
    ...         {"block_label": "text", "block_content": "B", "block_bbox": [0, 50, 9, 60], "block_order": 2},
    ...         {"block_label": "doc_title", "block_content": "A", "block_bbox": [0, 0, 9, 9],
    ...          "block_order": 1}]}}]}},
    ...     keep_labels=("text", "doc_title"))
    >>> [b.content for b in blocks]
    ['A', 'B']
"""

from __future__ import annotations

import base64
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from opensearch_vl.tools_env.backends.http import HttpClient
from PIL import Image

from opensearch_vl.errors import BackendError, PrerequisiteError

__all__ = ["Block", "RapidOcrEngine", "RemoteLayoutParser", "blocks_from_layout_response", "layout_token"]


@dataclass(frozen=True)
class Block:
    """One text block: PP-StructureV3 label, text, ``[x1, y1, x2, y2]`` box, and reading-order position."""

    label: str
    content: str
    bbox: tuple[int, int, int, int]
    order: int
    confidence: float | None = None


class RapidOcrEngine:
    """Local OCR with rapidocr-onnxruntime (models ship in the wheel; loaded once, on first use)."""

    def __init__(self, *, min_confidence: float = 0.5) -> None:
        self.min_confidence = min_confidence
        self._engine = None
        self._lock = threading.Lock()

    def _get(self):
        with self._lock:
            if self._engine is None:
                try:
                    from rapidocr_onnxruntime import RapidOCR
                except ImportError as exc:
                    raise PrerequisiteError(
                        "layout_parsing with the local backend needs rapidocr: "
                        "pip install 'opensearch-vl[ocr]'"
                    ) from exc
                self._engine = RapidOCR()
            return self._engine

    def parse(self, image: Image.Image) -> list[Block]:
        """Text lines of ``image`` in reading order."""
        engine = self._get()
        with self._lock:  # one inference at a time per engine; onnxruntime already uses every core
            result, _ = engine(np.ascontiguousarray(np.asarray(image.convert("RGB"))[:, :, ::-1]))
        words = []
        for box, text, score in result or []:
            if float(score) < self.min_confidence or not str(text).strip():
                continue
            xs, ys = [p[0] for p in box], [p[1] for p in box]
            words.append((min(xs), min(ys), max(xs), max(ys), str(text).strip(), float(score)))
        return _reading_order(words)


def _reading_order(words: Iterable[tuple]) -> list[Block]:
    rows: list[list[tuple]] = []
    for word in sorted(words, key=lambda w: ((w[1] + w[3]) / 2, w[0])):
        center = (word[1] + word[3]) / 2
        for row in rows:
            top, bottom = min(w[1] for w in row), max(w[3] for w in row)
            if top <= center <= bottom:
                row.append(word)
                break
        else:
            rows.append([word])
    blocks = []
    for order, row in enumerate(sorted(rows, key=lambda r: min(w[1] for w in r)), 1):
        row.sort(key=lambda w: w[0])
        text = " ".join(w[4] for w in row)
        bbox = (
            int(min(w[0] for w in row)),
            int(min(w[1] for w in row)),
            int(max(w[2] for w in row)),
            int(max(w[3] for w in row)),
        )
        blocks.append(Block("text", " ".join(text.split()), bbox, order, round(min(w[5] for w in row), 4)))
    return blocks


def layout_token(env_name: str) -> str | None:
    """The endpoint token from ``$env_name`` (optional: self-hosted servers usually need none)."""
    return os.environ.get(env_name, "").strip() or None


class RemoteLayoutParser:
    """PaddleX PP-StructureV3 serving: ``POST <api_url>`` with a base64 image; returns the response JSON.

    The request dict holds the PNG as bytes (so the cache key hashes the image content); it is base64-encoded
    here, when sent.
    """

    name = "pp_structure_v3"

    def __init__(self, http: HttpClient, *, api_url: str, token: str | None) -> None:
        self._http = http
        self._url = api_url
        self._headers = {"Authorization": f"token {token}"} if token else {}

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send ``{"file": png bytes, "fileType": 1, …flags}``; non-zero ``errorCode`` = backend error."""
        body = {**request, "file": base64.b64encode(request["file"]).decode("ascii")}
        response = self._http.request_json(
            "POST",
            self._url,
            service="layout_parsing",
            json_body=body,
            headers=self._headers,
            hint="check $LAYOUT_PARSING_TOKEN",
        )
        if not isinstance(response, dict):
            raise BackendError(
                "upstream_http", f"layout_parsing: {self._url} answered with a non-object JSON body"
            )
        if response.get("errorCode", 0) not in (0, None):
            raise BackendError(
                "upstream_http",
                f"layout_parsing: {self._url} errorCode {response.get('errorCode')}: "
                f"{response.get('errorMsg', '')}",
            )
        return response


def blocks_from_layout_response(response: dict[str, Any], *, keep_labels: Iterable[str]) -> list[Block]:
    """Blocks of the first page of a ``/layout-parsing`` response, kept labels only, in ``block_order``."""
    keep = set(keep_labels)
    try:
        pages = response["result"]["layoutParsingResults"]
        items = pages[0]["prunedResult"]["parsing_res_list"] if pages else []
    except (KeyError, IndexError, TypeError) as exc:
        raise BackendError(
            "upstream_http",
            "layout_parsing: the response has no "
            "result.layoutParsingResults[0].prunedResult.parsing_res_list; is the "
            "endpoint PP-StructureV3-compatible?",
        ) from exc
    blocks = []
    for position, item in enumerate(items):
        label, content = str(item.get("block_label", "")), str(item.get("block_content") or "").strip()
        if label not in keep or not content:
            continue
        raw_box = list(item.get("block_bbox") or [0, 0, 0, 0])[:4] + [0, 0, 0, 0]
        order = item.get("block_order")
        blocks.append(
            Block(
                label,
                content,
                tuple(int(v) for v in raw_box[:4]),
                int(order) if isinstance(order, (int, float)) else 10_000 + position,
            )
        )
    blocks.sort(key=lambda b: b.order)
    return [Block(b.label, b.content, b.bbox, i) for i, b in enumerate(blocks, 1)]
