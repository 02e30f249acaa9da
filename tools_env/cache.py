"""Record/replay cache of every external call (search, visit, lens, OCR endpoint, summarizer).

The cache is a *wrapper* around a backend: anything with a ``name`` and a ``call(request) -> dict`` method
(:class:`Service`) can be wrapped with :meth:`ResultCache.wrap`; the wrapped object has the same interface.
Tools never test whether caching is on.

The key is the SHA-256 of the canonical JSON of ``(tool, backend, request)``, where bytes in the request
(image content) are replaced by their SHA-256. Modes:

* ``off``: no cache object at all (:meth:`ResultCache.from_settings` returns ``None``);
* ``read_write``: a hit returns the recorded value; a miss calls the backend and records the result;
* ``replay``: a hit returns the recorded value; a miss raises :class:`~opensearch_vl.errors.ReplayMissError`.

Definite backend errors (404, a refused key) are recorded and replayed as the same error; transient ones
(429, 5xx, timeouts) are not recorded. Storage is one SQLite file in WAL mode with a busy timeout and
single-statement transactions, so many threads and several processes can share it.

Example:
    >>> import tempfile, os
    >>> cache = ResultCache(os.path.join(tempfile.mkdtemp(), "c.sqlite"), mode="read_write")
    >>> class Echo:
    ...     name = "echo"
    ...     def call(self, request): return {"echo": request["q"]}
    >>> svc = cache.wrap(Echo(), tool="text_search")
    >>> svc.call({"q": "a"}), svc.call({"q": "a"})
    ({'echo': 'a'}, {'echo': 'a'})
    >>> cache.stats().hits
    1
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from opensearch_vl.tools_env.backends.retry import TransientBackendError

from opensearch_vl.errors import BackendError, ConfigError, ReplayMissError

__all__ = [
    "ResultCache",
    "CacheStats",
    "CachedService",
    "Service",
    "canonical_key",
    "CacheMode",
    "file_summary",
]

CacheMode = Literal["read_write", "replay"]
_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key TEXT PRIMARY KEY,
    tool TEXT NOT NULL,
    backend TEXT NOT NULL,
    request TEXT NOT NULL,
    value TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS stats (
    tool TEXT NOT NULL,
    backend TEXT NOT NULL,
    hits INTEGER NOT NULL DEFAULT 0,
    misses INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tool, backend)
);
"""
_FLUSH_EVERY = 200


class Service(Protocol):
    """An external backend: ``call`` maps a JSON-able request (bytes allowed) to a JSON-able dict."""

    name: str

    def call(self, request: dict[str, Any]) -> dict[str, Any]: ...


def _canonical(obj: Any) -> Any:
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return {"$sha256": hashlib.sha256(bytes(obj)).hexdigest()}
    if isinstance(obj, dict):
        return {str(k): _canonical(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_canonical(v) for v in obj]
    return obj


def canonical_key(tool: str, backend: str, request: dict[str, Any]) -> tuple[str, str]:
    """``(key, request_json)``: the cache key and the canonical request text it was computed from.

    Example:
        >>> canonical_key("t", "b", {"b": 1, "a": b"x"})[0] == canonical_key("t", "b", {"a": b"x", "b": 1})[0]
        True
    """
    text = json.dumps(_canonical(request), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    key = hashlib.sha256(f"{tool}\x00{backend}\x00{text}".encode()).hexdigest()
    return key, text


@dataclass(frozen=True)
class CacheStats:
    """Counters of this cache object (``hits``, ``misses``, ``writes``) and the file's entry count."""

    hits: int
    misses: int
    writes: int
    entries: int


class ResultCache:
    """A SQLite-backed record/replay store shared by every tool of an environment (and across processes).

    Args:
        path: the SQLite file (created with its folder if missing).
        mode: ``read_write`` or ``replay``.
        busy_timeout_ms: how long to wait for another writer's lock.
    """

    def __init__(
        self, path: str | Path, mode: CacheMode = "read_write", *, busy_timeout_ms: int = 30_000
    ) -> None:
        if mode not in ("read_write", "replay"):
            raise ConfigError(
                f"cache mode {mode!r} is not valid here; use read_write or replay (off = no cache)"
            )
        self.path = Path(path)
        self.mode: CacheMode = mode
        self.busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._lock = threading.Lock()
        self._counts = {"hits": 0, "misses": 0, "writes": 0}
        self._pending: dict[tuple[str, str], list[int]] = {}
        self._connections: list[sqlite3.Connection] = []
        if mode == "replay" and not self.path.is_file():
            raise ConfigError(
                f"replay cache {self.path} does not exist; record it first with cache.mode: read_write"
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._connect()

    @classmethod
    def from_settings(cls, settings: Any) -> ResultCache | None:
        """Build the cache that ``CacheSettings`` ask for (``None`` when the mode is off).

        Example:
            >>> from opensearch_vl.tools_env.config import CacheSettings
            >>> ResultCache.from_settings(CacheSettings()) is None
            True
        """
        if settings.mode == "off":
            return None
        if not settings.path:
            raise ConfigError(
                f"cache.mode is {settings.mode!r} but cache.path is not set; give a SQLite file path"
            )
        return cls(settings.path, settings.mode, busy_timeout_ms=settings.busy_timeout_ms)

    def _connect(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        conn = sqlite3.connect(
            self.path, timeout=self.busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
        )
        conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_ms)}")
        if self.mode == "read_write":
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA)
        self._local.conn = conn
        with self._lock:
            self._connections.append(conn)
        return conn

    def wrap(self, service: Service, *, tool: str) -> CachedService:
        """Return ``service`` behind this cache, keyed under ``tool`` and ``service.name``."""
        return CachedService(service, self, tool)

    def lookup(self, tool: str, backend: str, request: dict[str, Any], compute: Any) -> dict[str, Any]:
        """Return the recorded value for the request, or (read_write) compute, record and return it."""
        key, request_text = canonical_key(tool, backend, request)
        row = self._connect().execute("SELECT value FROM entries WHERE key = ?", (key,)).fetchone()
        if row is not None:
            self._count(tool, backend, hit=True)
            return _decode(row[0])
        self._count(tool, backend, hit=False)
        if self.mode == "replay":
            raise ReplayMissError(
                f"replay cache {self.path} has no recorded {tool}/{backend} call for {request_text[:300]} "
                f"(key {key[:16]}); record it with cache.mode: read_write, or run without replay"
            )
        try:
            value = compute()
        except TransientBackendError:
            raise
        except BackendError as exc:
            self._store(
                key,
                tool,
                backend,
                request_text,
                {"$error": {"category": exc.category, "message": exc.message}},
            )
            raise
        self._store(key, tool, backend, request_text, value)
        return value

    def _store(self, key: str, tool: str, backend: str, request_text: str, value: Any) -> None:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        self._connect().execute(
            "INSERT OR REPLACE INTO entries (key, tool, backend, request, value, created) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (key, tool, backend, request_text, text, time.time()),
        )
        with self._lock:
            self._counts["writes"] += 1

    def _count(self, tool: str, backend: str, *, hit: bool) -> None:
        with self._lock:
            self._counts["hits" if hit else "misses"] += 1
            pending = self._pending.setdefault((tool, backend), [0, 0])
            pending[0 if hit else 1] += 1
            flush = sum(a + b for a, b in self._pending.values()) >= _FLUSH_EVERY
        if flush:
            self.flush_stats()

    def flush_stats(self) -> None:
        """Add this object's pending hit/miss counts to the file's ``stats`` table (no-op in replay mode)."""
        with self._lock:
            pending, self._pending = self._pending, {}
        if self.mode == "replay" or not pending:
            return
        conn = self._connect()
        for (tool, backend), (hits, misses) in pending.items():
            conn.execute(
                "INSERT INTO stats (tool, backend, hits, misses) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(tool, backend) "
                "DO UPDATE SET hits = hits + excluded.hits, misses = misses + excluded.misses",
                (tool, backend, hits, misses),
            )

    def stats(self) -> CacheStats:
        """Counters of this object plus the number of entries in the file."""
        entries = self._connect().execute("SELECT COUNT(*) FROM entries").fetchone()[0]
        with self._lock:
            return CacheStats(self._counts["hits"], self._counts["misses"], self._counts["writes"], entries)

    def close(self) -> None:
        """Flush the counters and close every connection this object opened."""
        self.flush_stats()
        with self._lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            conn.close()
        self._local = threading.local()


def _decode(text: str) -> dict[str, Any]:
    value = json.loads(text)
    if isinstance(value, dict) and "$error" in value:
        err = value["$error"]
        raise BackendError(err["category"], err["message"] + " (replayed from cache)")
    return value


class CachedService:
    """A :class:`Service` behind a :class:`ResultCache`; same ``name`` and ``call`` as the wrapped service."""

    def __init__(self, service: Service, cache: ResultCache, tool: str) -> None:
        self.service = service
        self.cache = cache
        self.tool = tool
        self.name = service.name

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        """Return the recorded response, or call the wrapped service (read_write) and record it."""
        return self.cache.lookup(self.tool, self.name, request, lambda: self.service.call(request))


def file_summary(path: str | Path) -> dict[str, Any]:
    """Entries and recorded hit/miss counts per tool and backend of a cache file (for ``cache stats``).

    Example:
        >>> file_summary("runs/tool_cache.sqlite")  # doctest: +SKIP
        {'path': 'runs/tool_cache.sqlite', 'entries': 12, 'by_backend': [...]}
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"cache file {path} does not exist")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT tool, backend, COUNT(*), SUM(LENGTH(value)) FROM entries GROUP BY tool, backend "
            "ORDER BY tool, backend"
        ).fetchall()
        stats = {
            (t, b): (h, m) for t, b, h, m in conn.execute("SELECT tool, backend, hits, misses FROM stats")
        }
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"{path} is not a tool cache ({exc})") from exc
    finally:
        conn.close()
    by_backend = []
    for tool, backend, count, size in rows:
        hits, misses = stats.pop((tool, backend), (0, 0))
        by_backend.append(
            {
                "tool": tool,
                "backend": backend,
                "entries": count,
                "bytes": size or 0,
                "hits": hits,
                "misses": misses,
            }
        )
    for (tool, backend), (hits, misses) in sorted(stats.items()):
        by_backend.append(
            {"tool": tool, "backend": backend, "entries": 0, "bytes": 0, "hits": hits, "misses": misses}
        )
    total_hits = sum(r["hits"] for r in by_backend)
    total_misses = sum(r["misses"] for r in by_backend)
    return {
        "path": str(path),
        "entries": sum(r["entries"] for r in by_backend),
        "hits": total_hits,
        "misses": total_misses,
        "by_backend": by_backend,
    }
