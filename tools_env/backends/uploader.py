"""How a local image gets the public URL that Google Lens needs.

An uploader is anything with ``upload(png: bytes, sha256: str) -> str`` returning a public URL. The built-in
:class:`DirectoryUploader` writes the PNG into a folder that a web server publishes (a bucket mount, an
nginx root) and returns its URL there; other services (S3, an image host) plug in as small classes.

Example:
    >>> import tempfile
    >>> up = DirectoryUploader(tempfile.mkdtemp(), "https://cdn.example.org/up")
    >>> up.upload(b"\\x89PNG...", "ab12")
    'https://cdn.example.org/up/ab12.png'
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from opensearch_vl.tools_env.config import ImageSearchSettings

from opensearch_vl.atomic_write import atomic_write_bytes
from opensearch_vl.errors import ConfigError

__all__ = ["ImageUploader", "DirectoryUploader", "make_uploader"]


class ImageUploader(Protocol):
    """Publishes image bytes and returns a URL the search service can download."""

    def upload(self, png: bytes, sha256: str) -> str: ...


class DirectoryUploader:
    """Write ``<sha256>.png`` into ``directory`` and return ``<base_url>/<sha256>.png``."""

    def __init__(self, directory: str | Path, base_url: str) -> None:
        self.directory = Path(directory)
        self.base_url = base_url.rstrip("/")

    def upload(self, png: bytes, sha256: str) -> str:
        """Write the image (atomically; content-addressed, so repeated uploads are free)."""
        target = self.directory / f"{sha256}.png"
        if not target.exists():
            atomic_write_bytes(target, png)  # world-readable: a web server publishes this folder
        return f"{self.base_url}/{sha256}.png"


def make_uploader(settings: ImageSearchSettings) -> ImageUploader | None:
    """The uploader the config asks for, or ``None`` (local images then cannot go to Lens)."""
    if settings.uploader == "none":
        return None
    if not settings.upload_dir or not settings.upload_base_url:
        raise ConfigError(
            "image_search.uploader is 'directory' but upload_dir or upload_base_url is not set; "
            "set both (the folder and the public URL it is served at)"
        )
    return DirectoryUploader(settings.upload_dir, settings.upload_base_url)
