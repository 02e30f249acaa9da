"""Offline reverse image search: a gallery of local images indexed by perceptual hashes (pHash + dHash).

A query image matches a gallery image when the summed Hamming distance of the two 64-bit hashes is small,
which finds the same picture re-encoded, resized, lightly cropped or recoloured, not merely similar scenes.
Each gallery entry carries a title, a page URL and a source, like a Lens "visual match".

Build one with ``opensearch-vl index build-gallery DIR_OR_JSONL --out GALLERY.sqlite``. A JSONL manifest has
one ``{"image": path, "title": …, "url": …, "source": …}`` per line (paths relative to the manifest); a
folder is scanned for images, using ``gallery.jsonl`` inside it for titles when present. With no gallery
configured the tools use the small sample gallery bundled in the package.

Example:
    >>> from PIL import Image
    >>> gallery = GalleryIndex.bundled()
    >>> first = gallery.entries[0]
    >>> gallery.search(Image.open(first.path), top_k=1)[0].title == first.title
    True
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
from PIL import Image

from opensearch_vl.atomic_write import atomic_target
from opensearch_vl.errors import ConfigError, DataError
from opensearch_vl.jsonl import iter_jsonl_objects

__all__ = [
    "GalleryIndex",
    "GalleryEntry",
    "GalleryMatch",
    "build_gallery_index",
    "bundled_gallery_path",
    "image_hashes",
]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif")
HASH_BITS = 128


def bundled_gallery_path() -> Path:
    """Folder of the sample gallery shipped with the package (``tools_env/data/gallery``)."""
    return Path(str(resources.files("opensearch_vl.tools_env") / "data" / "gallery"))


def image_hashes(image: Image.Image) -> tuple[int, int]:
    """``(phash, dhash)`` of ``image`` as 64-bit integers."""
    import imagehash

    gray = image.convert("L")

    def to_int(h) -> int:
        return int("".join("1" if b else "0" for b in h.hash.flatten()), 2)

    return to_int(imagehash.phash(gray)), to_int(imagehash.dhash(gray))


@dataclass(frozen=True)
class GalleryEntry:
    """A gallery image and what is known about it."""

    path: str
    title: str
    url: str
    source: str
    phash: int
    dhash: int


@dataclass(frozen=True)
class GalleryMatch:
    """A visual match: the entry's title, page URL, source, and distance (of 128 bits; 0 = same hashes)."""

    title: str
    url: str
    source: str
    distance: int
    image_path: str


def _manifest_rows(source: Path):
    if source.is_dir():
        manifest = source / "gallery.jsonl"
        if manifest.is_file():
            yield from _manifest_rows(manifest)
            return
        for path in sorted(p for p in source.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES):
            title = path.stem.replace("_", " ").replace("-", " ")
            yield {
                "image": str(path),
                "title": title,
                "url": path.resolve().as_uri(),
                "source": "local gallery",
            }
        return
    if not source.is_file():
        raise DataError(f"gallery source {source} is neither a folder nor a JSONL manifest")
    for number, row in iter_jsonl_objects(source):
        if not isinstance(row.get("image"), str):
            raise DataError(f'{source}:{number}: each line needs {{"image": path, "title", "url"}}')
        image = Path(row["image"])
        yield {**row, "image": str(image if image.is_absolute() else source.parent / image)}


def _entries(source: Path) -> list[GalleryEntry]:
    entries = []
    for row in _manifest_rows(source):
        path = Path(row["image"])
        try:
            with Image.open(path) as image:
                phash, dhash = image_hashes(image)
        except (OSError, ValueError) as exc:
            raise DataError(f"gallery image {path} cannot be read ({exc})") from exc
        entries.append(
            GalleryEntry(
                str(path.resolve()),
                str(row.get("title") or path.stem),
                str(row.get("url") or ""),
                str(row.get("source") or ""),
                phash,
                dhash,
            )
        )
    if not entries:
        raise DataError(f"gallery source {source} holds no images ({', '.join(IMAGE_SUFFIXES)})")
    return entries


def build_gallery_index(source: str | Path, out: str | Path) -> int:
    """Hash every gallery image into a new SQLite file; returns the number of images.

    Example:
        >>> build_gallery_index("photos/", "gallery.sqlite")  # doctest: +SKIP
        42
    """
    entries = _entries(Path(source))
    with atomic_target(out) as tmp:
        conn = sqlite3.connect(tmp)
        with conn:
            conn.execute(
                "CREATE TABLE images (path TEXT, title TEXT, url TEXT, source TEXT, phash TEXT, dhash TEXT)"
            )
            conn.executemany(
                "INSERT INTO images VALUES (?, ?, ?, ?, ?, ?)",
                [(e.path, e.title, e.url, e.source, f"{e.phash:016x}", f"{e.dhash:016x}") for e in entries],
            )
        conn.close()
    return len(entries)


def _popcount64(values: np.ndarray) -> np.ndarray:
    as_bytes = values.view(np.uint8).reshape(-1, 8)
    return np.unpackbits(as_bytes, axis=1).sum(axis=1)


class GalleryIndex:
    """Perceptual-hash search over gallery entries (held in memory; a numpy scan per query)."""

    def __init__(self, entries: list[GalleryEntry]) -> None:
        self.entries = entries
        self._phash = np.array([e.phash for e in entries], dtype=np.uint64)
        self._dhash = np.array([e.dhash for e in entries], dtype=np.uint64)

    @classmethod
    def load(cls, path: str | Path) -> GalleryIndex:
        """Open an index built by :func:`build_gallery_index`."""
        path = Path(path)
        if not path.is_file():
            raise ConfigError(
                f"gallery index {path} does not exist; build it with "
                "`opensearch-vl index build-gallery DIR_OR_JSONL --out GALLERY.sqlite`"
            )
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            rows = conn.execute("SELECT path, title, url, source, phash, dhash FROM images").fetchall()
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"{path} is not a gallery index ({exc})") from exc
        finally:
            conn.close()
        return cls([GalleryEntry(p, t, u, s, int(ph, 16), int(dh, 16)) for p, t, u, s, ph, dh in rows])

    @classmethod
    def from_source(cls, source: str | Path) -> GalleryIndex:
        """Hash a folder or manifest in memory, without writing an index file."""
        return cls(_entries(Path(source)))

    @classmethod
    def bundled(cls) -> GalleryIndex:
        """The sample gallery shipped with the package."""
        return cls.from_source(bundled_gallery_path())

    def search(
        self, image: Image.Image, *, top_k: int = 5, max_distance: int = HASH_BITS
    ) -> list[GalleryMatch]:
        """Entries within ``max_distance`` bits of ``image``, nearest first (ties keep gallery order)."""
        phash, dhash = image_hashes(image)
        distance = _popcount64(self._phash ^ np.uint64(phash)) + _popcount64(self._dhash ^ np.uint64(dhash))
        order = np.argsort(distance, kind="stable")[:top_k]
        return [
            GalleryMatch(
                self.entries[i].title,
                self.entries[i].url,
                self.entries[i].source,
                int(distance[i]),
                self.entries[i].path,
            )
            for i in order
            if distance[i] <= max_distance
        ]
