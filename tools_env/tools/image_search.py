"""image_search: reverse image search for an image id or an image URL.

Offline default: visual matches from the local gallery (perceptual hashes). Online: Google Lens through
Serper, which needs a public image URL; a stored image is first published through the configured
uploader, and without one the call is refused with a message saying how to configure it.

Example:
    >>> from PIL import Image
    >>> from opensearch_vl.tools_env.config import ToolEnvConfig
    >>> from opensearch_vl.tools_env.images import ImageStore
    >>> from opensearch_vl.tools_env.backends.gallery import bundled_gallery_path
    >>> store = ImageStore(); _ = store.add(Image.open(bundled_gallery_path() / "tallow_peak.png"))
    >>> "Tallow Peak" in ImageSearchTool(ToolEnvConfig(), None)({"url": "img_1"}, store).text
    True
"""

from __future__ import annotations

from typing import Any

from opensearch_vl.tools_env.backends.assembly import cached, gallery_index, http_client
from opensearch_vl.tools_env.backends.serper import SerperLens, lens_matches, serper_api_key
from opensearch_vl.tools_env.backends.uploader import make_uploader
from opensearch_vl.tools_env.backends.url_safety import check_url
from opensearch_vl.tools_env.config import ToolEnvConfig
from opensearch_vl.tools_env.images import ImageStore, decode_image
from opensearch_vl.tools_env.tool import FunctionTool, ToolResult, ToolSpec, register_tool

from opensearch_vl.errors import ToolError

__all__ = ["IMAGE_SEARCH", "ImageSearchTool"]

IMAGE_SEARCH = ToolSpec(
    name="image_search",
    description="Reverse image search: find web pages showing the same picture, to identify an entity, place "
    "or object. Give an image id (crop the object first for best results) or a direct image URL. "
    "Follow up with text_search.",
    parameters={
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": 'Image id such as "img_2", or an http(s) image URL.'},
            "image": {"type": "string", "description": "Alternative spelling of url for an image id."},
        },
        "required": [],
    },
)
_IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif", "image/bmp", "image/tiff")


class ImageSearchTool:
    """Resolves the reference (store id or URL) and queries the configured backend."""

    def __init__(self, config: ToolEnvConfig, cache: Any) -> None:
        self.config = config
        self.settings = config.image_search
        self.http = http_client(config)
        if self.settings.backend == "serper_lens":
            key = serper_api_key(
                config.search.serper_api_key_env, what="image_search.backend is 'serper_lens'"
            )
            self.lens = cached(
                SerperLens(
                    self.http,
                    base_url=config.search.serper_base_url,
                    api_key=key,
                    env_name=config.search.serper_api_key_env,
                ),
                cache,
                "image_search",
            )
            self.uploader = make_uploader(self.settings)
            self.gallery = None
        else:
            self.lens = None
            self.uploader = None
            self.gallery = gallery_index(config)

    def __call__(self, arguments: dict[str, Any], store: ImageStore) -> ToolResult:
        ref = str(arguments.get("url") or arguments.get("image") or "").strip()
        if not ref:
            raise ToolError(
                "bad_arguments", 'image_search: give an image id or URL in "url", e.g. {"url": "img_1"}'
            )
        is_url = ref.lower().startswith(("http://", "https://"))
        if not is_url and ImageStore.normalize_ref(ref) not in store:
            store.record(ref)  # raises not_found listing the available ids
        if self.lens is not None:
            return self._lens(ref, is_url, store)
        if is_url:
            page = self.http.fetch_public(
                ref,
                max_bytes=self.config.visit.max_page_bytes,
                max_redirects=self.config.visit.max_redirects,
                allowed_types=_IMAGE_TYPES,
                service="image_search",
            )
            image, label = decode_image(page.body, max_pixels=self.config.max_image_pixels, what=ref), ref
        else:
            record = store.record(ref)
            image, label = record.image, record.id
        matches = self.gallery.search(
            image, top_k=self.settings.top_k, max_distance=self.settings.max_distance
        )
        if not matches:
            return ToolResult(
                text=f"No visual matches for {label} in the image gallery.",
                info={"backend": "local_gallery", "matches": 0},
            )
        lines = [f"Visual matches for {label} ({len(matches)}):"]
        for i, m in enumerate(matches, 1):
            lines.append(
                f"[Match {i}] {m.title}\nURL: {m.url}\nSource: {m.source} "
                f"(hash distance {m.distance} of 128 bits)"
            )
        return ToolResult(text="\n".join(lines), info={"backend": "local_gallery", "matches": len(matches)})

    def _lens(self, ref: str, is_url: bool, store: ImageStore) -> ToolResult:
        if is_url:
            url = check_url(ref, allow_private=self.config.allow_private_urls, resolve=False).url
            label = url
        else:
            record = store.record(ref)
            if self.uploader is None:
                raise ToolError(
                    "bad_arguments",
                    f"image_search: {record.id} is a local image and Google Lens needs a "
                    "public URL, but no uploader is configured; set image_search.uploader:"
                    " directory (with upload_dir and upload_base_url), or pass a public "
                    "image URL",
                )
            url, label = self.uploader.upload(record.png, record.sha256), record.id
        matches = lens_matches(self.lens.call({"url": url, "hl": "en", "gl": self.config.search.gl}))
        matches = matches[: self.settings.top_k]
        if not matches:
            return ToolResult(
                text=f"No visual matches for {label}.", info={"backend": "serper_lens", "matches": 0}
            )
        lines = [f"Visual matches for {label} ({len(matches)}):"]
        for i, m in enumerate(matches, 1):
            lines.append(f"[Match {i}] {m['title']}\nURL: {m['link']}\nSource: {m['source']}")
        return ToolResult(
            text="\n".join(lines), info={"backend": "serper_lens", "matches": len(matches), "image_url": url}
        )


@register_tool("image_search")
def make_image_search(config: ToolEnvConfig, cache: Any = None) -> FunctionTool:
    """The image_search tool with the configured backend."""
    return FunctionTool(IMAGE_SEARCH, ImageSearchTool(config, cache))
