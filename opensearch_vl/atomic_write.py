"""Write files so that readers see the old content or the new, never a torn file, and a crash loses nothing.

The data goes to a temporary file in the target's folder, is flushed to disk, gets the permissions a plain
``open(path, "w")`` would give (``0o666`` less the umask, rather than ``mkstemp``'s ``0o600``, so reports
and transcripts on shared storage stay readable), and is renamed over the target.

Example:
    >>> atomic_write_bytes("/tmp/_osvl_example.txt", b"done")
    >>> open("/tmp/_osvl_example.txt").read()
    'done'
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["atomic_write_bytes", "atomic_target"]


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextmanager
def atomic_target(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; when the block succeeds it replaces ``path``.

    For writers that need a file name rather than bytes (SQLite, a library's ``save``).

    Example:
        >>> with atomic_target("/tmp/_osvl_example.db") as tmp:
        ...     _ = tmp.write_text("x")
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, _default_mode())
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically and durably (fsync before the rename)."""
    with atomic_target(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
