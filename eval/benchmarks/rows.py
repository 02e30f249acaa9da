"""Reading benchmark files: parquet, JSONL and JSON rows, and the many ways they carry images and answers.

Example:
    >>> rows = list(read_rows(Path("bc_vl_level1.jsonl")))  # doctest: +SKIP
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from opensearch_vl.errors import DataError
from opensearch_vl.jsonl import iter_jsonl_objects

__all__ = ["read_rows", "image_sources", "answer_list", "pick", "data_files"]

_SUFFIXES = (".parquet", ".jsonl", ".json")
_BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]+$")
_IMAGE_MAGIC = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"RIFF", b"BM", b"II*\x00", b"MM\x00*")


def data_files(path: Path, patterns: Sequence[str] = ("*.parquet", "*.jsonl", "*.json")) -> list[Path]:
    """``path`` itself if it is a file, else the files under it matching ``patterns`` (sorted)."""
    if path.is_file():
        return [path]
    if not path.exists():
        raise DataError(f"{path}: no such file or folder; pass --data pointing at the benchmark's files")
    files = sorted({f for pattern in patterns for f in path.glob(pattern) if f.is_file()})
    if not files:
        raise DataError(f"{path}: no data files matching {', '.join(patterns)}")
    return files


def read_rows(path: Path) -> Iterator[dict[str, Any]]:
    """Rows of one ``.parquet`` / ``.jsonl`` / ``.json`` file (a JSON list, or an object with a ``data`` list)."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as exc:
            from opensearch_vl.errors import PrerequisiteError

            raise PrerequisiteError(
                "reading parquet needs pyarrow: pip install 'opensearch-vl[eval]'"
            ) from exc
        parquet = pq.ParquetFile(path)
        for batch in parquet.iter_batches(batch_size=256):
            yield from batch.to_pylist()
    elif suffix == ".jsonl":
        for _, row in iter_jsonl_objects(path):
            yield row
    elif suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict):
            data = data.get("data", data.get("rows"))
        if not isinstance(data, list):
            raise DataError(f"{path}: expected a JSON list of rows (or {{'data': [...]}})")
        yield from data
    else:
        raise DataError(f"{path}: unsupported file type {suffix!r}; use one of {', '.join(_SUFFIXES)}")


def pick(row: dict[str, Any], *keys: str, default: Any = None) -> Any:
    """The value of the first of ``keys`` present in ``row`` and not empty."""
    for key in keys:
        value = row.get(key)
        if value is not None and value != "" and value != []:
            return value
    return default


def _one_image(value: Any, base: Path) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": bytes(value)}
    if isinstance(value, dict):
        if value.get("bytes"):
            return {"bytes": bytes(value["bytes"])}
        for key in ("path", "url", "image_url", "cos_url", "img_path", "image_path"):
            if value.get(key):
                return _one_image(value[key], base)
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if text.startswith(("data:", "http://", "https://")):
            return text
        if _looks_like_base64_image(text):
            return "data:image/png;base64," + "".join(text.split())
        path = Path(text).expanduser()
        return str(path if path.is_absolute() else (base / path).resolve())
    return None


def _looks_like_base64_image(text: str) -> bool:
    if len(text) < 32 or not _BASE64.match(text[:4096]):
        return False
    try:
        head = base64.b64decode("".join(text[:64].split())[:48])
    except (binascii.Error, ValueError):
        return False
    return head.startswith(_IMAGE_MAGIC)


def image_sources(value: Any, base: Path) -> list[Any]:
    """Normalize an image field into ``Task.images`` entries.

    Accepts bytes, ``{"bytes"|"path"|"url"…}`` dicts, data URIs, URLs, raw base64 strings, and paths (relative
    ones are resolved against ``base``), or a list of any of these. Empty values give ``[]``.
    """
    if value is None:
        return []
    if hasattr(value, "tolist") and not isinstance(value, (bytes, str)):
        value = value.tolist()
    items = value if isinstance(value, list) else [value]
    return [img for img in (_one_image(v, base) for v in items) if img is not None]


def answer_list(*values: Any) -> list[str]:
    """Reference answers, deduplicated in order; JSON-encoded lists and nested lists are flattened.

    Example:
        >>> answer_list("Paris", '["Paris", "City of Light"]')
        ['Paris', 'City of Light']
    """
    out: list[str] = []

    def add(value: Any) -> None:
        if value is None:
            return
        if hasattr(value, "tolist") and not isinstance(value, (bytes, str)):
            value = value.tolist()
        if isinstance(value, (list, tuple)):
            for item in value:
                add(item)
            return
        if isinstance(value, dict):  # InfoSeek numeric answers: {"wikidata": 12.5, "range": [...]}
            add(value.get("wikidata", value.get("answer")))
            return
        text = str(value).strip()
        if text.startswith("[") and text.endswith("]"):
            try:
                add(json.loads(text))
                return
            except json.JSONDecodeError:
                pass
        if text and text not in out:
            out.append(text)

    for value in values:
        add(value)
    return out
