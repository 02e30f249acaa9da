"""Reading JSONL files whose every line is a JSON object, with errors that name the file and line.

Example:
    >>> from pathlib import Path
    >>> p = Path("/tmp/_example.jsonl"); _ = p.write_text('{"a": 1}\\n\\n{"a": 2}\\n')
    >>> [(n, row["a"]) for n, row in iter_jsonl_objects(p)]
    [(1, 1), (3, 2)]
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from opensearch_vl.errors import DataError

__all__ = ["iter_jsonl_objects"]


def iter_jsonl_objects(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line; a bad line raises ``DataError`` naming it."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path} does not exist")
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}:{number}: not valid JSON ({exc.msg})") from exc
            if not isinstance(row, dict):
                raise DataError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}")
            yield number, row
