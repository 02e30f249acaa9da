"""The per-episode image store: every image the agent can refer to, by id (``img_1``, ``img_2``, …).

``img_1`` is the task image (a task with several images gets ``img_1``…``img_n``); each image a tool produces
gets the next id. Images are kept decoded (RGB) and as a hash of their pixels that is their identity in
transcripts and in the result cache (PNG bytes are encoded on first use).

Inputs accepted by :meth:`ImageStore.add`: a PIL image, raw bytes, a ``data:`` URI, a ``{"bytes": …, "path": …}``
dict (Hugging Face datasets' image feature), a filesystem path under one of the configured roots, or an
http(s) URL (fetched only through the ``fetch_url`` callable the environment passes in, which applies the URL
safety policy). The pixel count is checked from the header *before* decoding (decompression bombs).

Example:
    >>> from PIL import Image
    >>> store = ImageStore()
    >>> store.add(Image.new("RGB", (64, 48)))
    'img_1'
    >>> store.get("img_1").size
    (64, 48)
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import re
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError

from opensearch_vl.errors import ToolError

__all__ = ["ImageStore", "StoredImage", "DEFAULT_MAX_PIXELS", "decode_image", "png_bytes", "pixel_sha256"]

DEFAULT_MAX_PIXELS = 64 * 1024 * 1024  # 64 MP: far above any benchmark image, far below a bomb
SUPPORTED_FORMATS = ("PNG", "JPEG", "WEBP", "GIF", "BMP", "TIFF")
_ID = re.compile(r"^img_(\d+)$")
_DATA_URI = re.compile(r"^data:image/[\w.+-]+;base64,(.*)$", re.S)


@dataclass(eq=False)
class StoredImage:
    """One image of the episode: its id, decoded pixels and origin; hash and PNG bytes on first use.

    The hash identifies the pixels (mode, size and RGB bytes), not a file encoding, so it is cheap and the
    same whichever format the image arrived in. PNG encoding, the expensive part, happens only when
    something needs the bytes (saving a transcript, an upload, an OCR request), not on every tool call.
    """

    id: str
    image: Image.Image
    origin: str  # "task" or the name of the tool that produced it

    @cached_property
    def sha256(self) -> str:
        """SHA-256 over ``RGB <w>x<h>`` and the raw pixel bytes."""
        return pixel_sha256(self.image)

    @cached_property
    def png(self) -> bytes:
        """Canonical PNG bytes (see :func:`png_bytes`)."""
        return png_bytes(self.image)


def pixel_sha256(image: Image.Image) -> str:
    """Content hash of an RGB image's pixels. Example: ``pixel_sha256(Image.new("RGB", (1, 1)))[:8]``."""
    digest = hashlib.sha256(f"RGB {image.width}x{image.height}\n".encode())
    digest.update(image.tobytes())
    return digest.hexdigest()


def png_bytes(image: Image.Image) -> bytes:
    """Canonical PNG encoding (RGB, no metadata) used for hashing and storage."""
    buf = io.BytesIO()
    image.save(buf, format="PNG", optimize=False, compress_level=1)
    return buf.getvalue()


def decode_image(data: bytes, *, max_pixels: int = DEFAULT_MAX_PIXELS, what: str = "image") -> Image.Image:
    """Decode ``data`` into an RGB image, refusing bombs, corrupt files and unsupported formats.

    Example:
        >>> decode_image(png_bytes(Image.new("RGB", (2, 2)))).size
        (2, 2)
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            probe = Image.open(io.BytesIO(data))
            fmt = probe.format
            width, height = probe.size
    except (UnidentifiedImageError, Image.DecompressionBombWarning, Image.DecompressionBombError) as exc:
        raise ToolError("bad_arguments", f"{what}: not a decodable image ({exc.__class__.__name__})") from exc
    except OSError as exc:
        raise ToolError("bad_arguments", f"{what}: corrupt image data ({exc})") from exc
    if fmt not in SUPPORTED_FORMATS:
        raise ToolError(
            "bad_arguments", f"{what}: unsupported format {fmt}; supported: {', '.join(SUPPORTED_FORMATS)}"
        )
    if width * height > max_pixels:
        raise ToolError(
            "bad_arguments",
            f"{what}: {width}x{height} = {width * height} pixels exceeds the limit of {max_pixels} "
            "(raise tools.max_image_pixels if this image is legitimate)",
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            image.load()
    except (OSError, ValueError, Image.DecompressionBombError) as exc:
        raise ToolError("bad_arguments", f"{what}: corrupt image data ({exc})") from exc
    return image.convert("RGB")


class ImageStore:
    """Images of one episode, by id. Not shared between episodes.

    Args:
        roots: folders from which plain filesystem paths may be loaded; any other path is refused.
        max_pixels: refuse images with more pixels than this, before decoding.
        fetch_url: callable ``url -> bytes`` used for http(s) references; ``None`` refuses URLs.
    """

    def __init__(
        self,
        *,
        roots: Iterable[str | Path] = (),
        max_pixels: int = DEFAULT_MAX_PIXELS,
        fetch_url: Callable[[str], bytes] | None = None,
    ) -> None:
        self._images: dict[str, StoredImage] = {}
        self._roots = tuple(Path(r).resolve() for r in roots)
        self.max_pixels = max_pixels
        self._fetch_url = fetch_url

    def __len__(self) -> int:
        return len(self._images)

    def __contains__(self, ref: object) -> bool:
        return isinstance(ref, str) and ref in self._images

    @property
    def ids(self) -> list[str]:
        """Ids in the order they were added."""
        return list(self._images)

    def add(self, source: Any, *, origin: str = "task") -> str:
        """Decode ``source`` and store it under the next id; returns the id."""
        image = self._load(source)
        image_id = f"img_{len(self._images) + 1}"
        self._images[image_id] = StoredImage(image_id, image, origin)
        return image_id

    def get(self, ref: str) -> Image.Image:
        """The decoded image for ``ref`` (an id such as ``img_2``; ``2`` and ``image_2`` are accepted too)."""
        return self.record(ref).image

    def record(self, ref: str) -> StoredImage:
        """The full :class:`StoredImage` for ``ref``; a missing id is a ``not_found`` tool error."""
        key = self.normalize_ref(ref)
        if key not in self._images:
            available = ", ".join(self._images) or "none"
            raise ToolError("not_found", f"image reference {ref!r} not found; available: {available}")
        return self._images[key]

    def records(self) -> list[StoredImage]:
        """Every stored image, in id order."""
        return list(self._images.values())

    @staticmethod
    def normalize_ref(ref: Any) -> str:
        """Map the spellings models use (``img_2``, ``2``, ``image_2``, ``<img_2>``) to ``img_2``."""
        text = str(ref).strip().strip("<>").strip()
        if text.isdigit():
            return f"img_{int(text)}"
        text = re.sub(r"^(image|img)[_\s-]?", "img_", text, flags=re.I)
        match = _ID.match(text)
        return f"img_{int(match.group(1))}" if match else str(ref)

    def _load(self, source: Any) -> Image.Image:
        if isinstance(source, Image.Image):
            if source.width * source.height > self.max_pixels:
                raise ToolError(
                    "bad_arguments",
                    f"image of {source.width}x{source.height} exceeds {self.max_pixels} pixels",
                )
            if source.mode != "RGB":
                return source.convert("RGB")
            source.load()  # a lazily opened file is read now, not when its file may be gone
            return source  # already RGB: no copy
        if isinstance(source, (bytes, bytearray, memoryview)):
            return decode_image(bytes(source), max_pixels=self.max_pixels)
        if isinstance(source, dict):
            if source.get("bytes"):
                return decode_image(bytes(source["bytes"]), max_pixels=self.max_pixels)
            if source.get("path"):
                return self._load(source["path"])
            raise ToolError("bad_arguments", f"image dict needs 'bytes' or 'path', got keys {sorted(source)}")
        if isinstance(source, Path):
            source = str(source)
        if not isinstance(source, str):
            raise ToolError("bad_arguments", f"unsupported image source of type {type(source).__name__}")
        match = _DATA_URI.match(source)
        if match:
            try:
                data = base64.b64decode(match.group(1), validate=False)
            except binascii.Error as exc:
                raise ToolError("bad_arguments", f"data URI is not valid base64 ({exc})") from exc
            return decode_image(data, max_pixels=self.max_pixels, what="data URI")
        if source.startswith(("http://", "https://")):
            if self._fetch_url is None:
                raise ToolError(
                    "bad_arguments", f"image URL {source!r} refused: URL images are not enabled here"
                )
            return decode_image(self._fetch_url(source), max_pixels=self.max_pixels, what=source)
        return decode_image(self._read_path(source), max_pixels=self.max_pixels, what=source)

    def _read_path(self, raw: str) -> bytes:
        path = Path(raw.removeprefix("file://")).expanduser().resolve()
        if not any(path.is_relative_to(root) for root in self._roots):
            raise ToolError(
                "bad_arguments",
                f"image path {raw!r} is outside the allowed roots; refer to images by id (img_1, …)",
            )
        if not path.is_file():
            raise ToolError("not_found", f"image file {raw!r} does not exist")
        return path.read_bytes()
