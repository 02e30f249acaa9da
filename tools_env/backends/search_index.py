"""Offline full-text search: a SQLite FTS5 index (bm25 ranking) over a JSONL corpus of ``{url, title, text}``.

The index also serves the corpus pages to ``visit`` by URL, so an offline episode can search and then read.
Build one with ``opensearch-vl index build-corpus CORPUS.jsonl --out INDEX.sqlite``; with no index configured
the tools use the small sample corpus bundled in the package (indexed in memory when first used).

Example:
    >>> index = CorpusIndex.bundled()
    >>> hits = index.search("lighthouse", top_k=2)
    >>> hits[0].url.startswith("https://")
    True
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from opensearch_vl.atomic_write import atomic_target
from opensearch_vl.errors import ConfigError, DataError
from opensearch_vl.jsonl import iter_jsonl_objects

__all__ = [
    "CorpusIndex",
    "SearchHit",
    "CorpusPage",
    "build_corpus_index",
    "normalize_url",
    "bundled_corpus_path",
]

_SCHEMA = """
CREATE TABLE docs (id INTEGER PRIMARY KEY, url TEXT NOT NULL, url_key TEXT NOT NULL, title TEXT NOT NULL,
                   text TEXT NOT NULL);
CREATE UNIQUE INDEX docs_url_key ON docs(url_key);
CREATE VIRTUAL TABLE docs_fts USING fts5(title, text, content='docs', content_rowid='id',
                                         tokenize='porter unicode61 remove_diacritics 2');
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_WORD = re.compile(r"\w+", re.UNICODE)
_TITLE_WEIGHT, _TEXT_WEIGHT = 3.0, 1.0
_MAX_QUERY_TERMS = 32


def bundled_corpus_path() -> Path:
    """Path of the sample corpus shipped with the package (``tools_env/data/sample_corpus.jsonl``)."""
    return Path(str(resources.files("opensearch_vl.tools_env") / "data" / "sample_corpus.jsonl"))


def normalize_url(url: str) -> str:
    """The form URLs are matched in: no fragment, no scheme, no ``www.``, no trailing slash, host lower-cased.

    Example:
        >>> normalize_url("HTTPS://www.Example.org/a/#top")
        'example.org/a'
    """
    url = url.strip().split("#", 1)[0]
    scheme, sep, rest = url.partition("://")
    if not sep:
        rest = scheme
    host, slash, path = rest.partition("/")
    host = host.lower().removeprefix("www.")
    return (host + slash + path).rstrip("/")


@dataclass(frozen=True)
class SearchHit:
    """One ranked result: URL, title, a snippet around the matches, and the bm25 score (lower = better)."""

    url: str
    title: str
    snippet: str
    score: float


@dataclass(frozen=True)
class CorpusPage:
    """A whole document of the corpus, as ``visit`` serves it."""

    url: str
    title: str
    text: str


def _read_corpus(path: Path):
    if not path.is_file():
        raise DataError(f"corpus file {path} does not exist")
    for number, row in iter_jsonl_objects(path):
        missing = [k for k in ("url", "text") if not isinstance(row.get(k), str) or not row[k].strip()]
        if missing:
            raise DataError(
                f"{path}:{number}: missing or empty string field(s) {missing}; "
                'each line needs {"url", "title", "text"}'
            )
        yield row["url"].strip(), str(row.get("title") or "").strip(), row["text"]


def _fill(conn: sqlite3.Connection, corpus: Path) -> int:
    conn.executescript(_SCHEMA)
    count = 0
    with conn:
        for url, title, text in _read_corpus(corpus):
            conn.execute(
                "INSERT OR REPLACE INTO docs (url, url_key, title, text) VALUES (?, ?, ?, ?)",
                (url, normalize_url(url), title, text),
            )
            count += 1
        conn.execute("INSERT INTO docs_fts(docs_fts) VALUES ('rebuild')")
        conn.execute("INSERT INTO docs_fts(docs_fts) VALUES ('optimize')")
        conn.execute("INSERT INTO meta VALUES ('source', ?), ('built', ?)", (str(corpus), str(time.time())))
    return count


def build_corpus_index(corpus: str | Path, out: str | Path) -> int:
    """Index a JSONL corpus into a new SQLite file (written beside ``out``, then renamed); returns the count.

    Example:
        >>> build_corpus_index("corpus.jsonl", "corpus.sqlite")  # doctest: +SKIP
        100000
    """
    with atomic_target(out) as tmp:
        conn = sqlite3.connect(tmp)
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        count = _fill(conn, Path(corpus))
        conn.close()
    return count


def _match_expression(query: str) -> str | None:
    terms = list(dict.fromkeys(t.lower() for t in _WORD.findall(query)))[:_MAX_QUERY_TERMS]
    return " OR ".join(f'"{t}"' for t in terms) if terms else None


class CorpusIndex:
    """Read access to a corpus index: ranked search and page lookup. Safe to share between threads.

    Args:
        path: an index built by :func:`build_corpus_index`.
    """

    def __init__(self, path: str | Path | None = None, *, _conn: sqlite3.Connection | None = None) -> None:
        self.path = Path(path) if path else None
        self._shared = _conn
        self._lock = threading.Lock()
        self._local = threading.local()
        if _conn is None:
            if self.path is None or not self.path.is_file():
                raise ConfigError(
                    f"corpus index {path} does not exist; build it with "
                    "`opensearch-vl index build-corpus CORPUS.jsonl --out INDEX.sqlite`"
                )
            self._check(self._conn())

    @classmethod
    def bundled(cls) -> CorpusIndex:
        """An in-memory index of the bundled sample corpus."""
        return cls.from_jsonl(bundled_corpus_path())

    @classmethod
    def from_jsonl(cls, corpus: str | Path) -> CorpusIndex:
        """Index a (small) JSONL corpus in memory."""
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        _fill(conn, Path(corpus))
        return cls(None, _conn=conn)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
            self._local.conn = conn
        return conn

    def _check(self, conn: sqlite3.Connection) -> None:
        try:
            conn.execute("SELECT 1 FROM docs_fts LIMIT 1").fetchall()
        except sqlite3.DatabaseError as exc:
            raise ConfigError(
                f"{self.path} is not a corpus index ({exc}); rebuild it with "
                "`opensearch-vl index build-corpus`"
            ) from exc

    def _query(self, sql: str, params: tuple) -> list[tuple]:
        if self._shared is not None:
            with self._lock:
                return self._shared.execute(sql, params).fetchall()
        return self._conn().execute(sql, params).fetchall()

    def __len__(self) -> int:
        return self._query("SELECT COUNT(*) FROM docs", ())[0][0]

    def search(self, query: str, top_k: int = 5, *, snippet_tokens: int = 40) -> list[SearchHit]:
        """The ``top_k`` best documents for ``query`` (any of its words; bm25, title weighted 3×)."""
        expression = _match_expression(query)
        if expression is None:
            return []
        # Rank first, then snippet only the k winners (a snippet re-tokenizes its document).
        ranked = self._query(
            f"SELECT rowid, bm25(docs_fts, {_TITLE_WEIGHT}, {_TEXT_WEIGHT}) AS score FROM docs_fts "
            "WHERE docs_fts MATCH ? ORDER BY score LIMIT ?",
            (expression, int(top_k)),
        )
        if not ranked:
            return []
        marks = ",".join("?" * len(ranked))
        rows = self._query(
            "SELECT d.id, d.url, d.title, coalesce(nullif(snippet(docs_fts, 1, '', '', ' … ', ?), ''), "
            f"substr(d.text, 1, 300)) FROM docs_fts JOIN docs d ON d.id = docs_fts.rowid "
            f"WHERE docs_fts MATCH ? AND docs_fts.rowid IN ({marks})",
            (max(1, min(snippet_tokens, 64)), expression, *[rowid for rowid, _ in ranked]),
        )
        by_id = {row[0]: row[1:] for row in rows}
        return [SearchHit(*by_id[rowid], float(score)) for rowid, score in ranked if rowid in by_id]

    def page(self, url: str) -> CorpusPage | None:
        """The stored document whose URL matches ``url`` (see :func:`normalize_url`), or ``None``."""
        rows = self._query("SELECT url, title, text FROM docs WHERE url_key = ?", (normalize_url(url),))
        return CorpusPage(*rows[0]) if rows else None
