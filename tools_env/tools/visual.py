"""Visual tools: crop, sharpen, super_resolution, perspective_correct. Local, deterministic, OpenCV/PIL.

Each produces a new image (the environment stores it under the next id and announces the id) and a text
saying exactly what was done, including every adjustment (a clamped crop box, the classical upscaler used
because no model is configured). perspective_correct that finds no document-like quadrilateral is *not*
an error: it produces no image and says so, like a search with no results.

Example:
    >>> from opensearch_vl.tools_env.images import ImageStore
    >>> from PIL import Image
    >>> store = ImageStore(); _ = store.add(Image.new("RGB", (100, 80)))
    >>> crop_image({"image": "img_1", "x": 90, "y": 0, "width": 50, "height": 40}, store).images[0].size
    (10, 40)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from opensearch_vl.tools_env.config import SuperResolutionSettings, ToolEnvConfig
from opensearch_vl.tools_env.images import ImageStore
from opensearch_vl.tools_env.tool import FunctionTool, ToolResult, ToolSpec, register_tool
from PIL import Image

from opensearch_vl.errors import ConfigError, PrerequisiteError, ToolError

__all__ = [
    "CROP",
    "SHARPEN",
    "SUPER_RESOLUTION",
    "PERSPECTIVE_CORRECT",
    "crop_image",
    "sharpen_image",
    "SuperResolver",
    "correct_perspective",
]

_IMAGE = {"type": "string", "description": 'Image id to work on, e.g. "img_1".'}

CROP = ToolSpec(
    name="crop",
    description="Crop a region of an image to inspect small details; returns the region as a new image. "
    "Use it when the target covers a small part of the frame (under about 30%). Coordinates are "
    "absolute pixels of the referenced image: top-left corner plus width and height.",
    parameters={
        "type": "object",
        "properties": {
            "image": _IMAGE,
            "x": {"type": "integer", "description": "Left edge in pixels."},
            "y": {"type": "integer", "description": "Top edge in pixels."},
            "width": {"type": "integer", "description": "Width in pixels (> 0)."},
            "height": {"type": "integer", "description": "Height in pixels (> 0)."},
        },
        "required": ["image", "x", "y", "width", "height"],
    },
    produces_images=True,
)

SHARPEN = ToolSpec(
    name="sharpen",
    description="Sharpen a blurry image with an unsharp mask: out = (1 + amount) * image - amount * blurred. "
    "Returns a new image.",
    parameters={
        "type": "object",
        "properties": {
            "image": _IMAGE,
            "amount": {
                "type": "number",
                "minimum": 0,
                "maximum": 10,
                "default": 1.5,
                "description": "Strength; 1.5 by default. Larger values sharpen more and add noise.",
            },
        },
        "required": ["image"],
    },
    produces_images=True,
)

SUPER_RESOLUTION = ToolSpec(
    name="super_resolution",
    description="Upscale a small or low-resolution image by 2, 3 or 4 to make fine text and details "
    "readable. "
    "Returns a new image.",
    parameters={
        "type": "object",
        "properties": {
            "image": _IMAGE,
            "scale": {
                "type": "integer",
                "minimum": 2,
                "maximum": 4,
                "default": 4,
                "description": "Upscaling factor.",
            },
        },
        "required": ["image"],
    },
    produces_images=True,
)

PERSPECTIVE_CORRECT = ToolSpec(
    name="perspective_correct",
    description="Straighten a photographed document, sign or screen seen at an angle: finds its four corners "
    "and warps it to a frontal rectangle. Returns a new image, or says that no such shape was found.",
    parameters={"type": "object", "properties": {"image": _IMAGE}, "required": ["image"]},
    produces_images=True,
)


def _rgb(image: Image.Image) -> np.ndarray:
    # Blur, resize and warp treat channels alike, so the arrays stay RGB (no BGR flips: they cost copies).
    return np.asarray(image)


def _pil(rgb: np.ndarray) -> Image.Image:
    # Wraps the array's memory instead of copying it (Image.fromarray copies a 12 MB frame at 2048^2).
    rgb = np.ascontiguousarray(rgb)
    return Image.frombuffer("RGB", (rgb.shape[1], rgb.shape[0]), rgb, "raw", "RGB", 0, 1)


def crop_image(arguments: dict[str, Any], store: ImageStore) -> ToolResult:
    """Crop ``(x, y, width, height)`` from the image, clamped to its bounds; an empty box is an error."""
    ref = arguments["image"]
    image = store.get(ref)
    x, y, w, h = (int(arguments[k]) for k in ("x", "y", "width", "height"))
    if w <= 0 or h <= 0:
        raise ToolError(
            "bad_arguments", f"crop: width and height must be positive integers, got width={w}, height={h}"
        )
    left, top = max(0, x), max(0, y)
    right, bottom = min(image.width, x + w), min(image.height, y + h)
    if right <= left or bottom <= top:
        raise ToolError(
            "bad_arguments",
            f"crop: box (x={x}, y={y}, width={w}, height={h}) lies outside "
            f"{ref}, which is {image.width}x{image.height} pixels; give a box inside it",
        )
    box = (left, top, right - left, bottom - top)
    clamped = box != (x, y, w, h)
    text = f"Cropped {ref} to x={box[0]}, y={box[1]}, width={box[2]}, height={box[3]}"
    if clamped:
        text += (
            f" (requested x={x}, y={y}, width={w}, height={h}; "
            f"clamped to the {image.width}x{image.height} image)"
        )
    return ToolResult(
        text=text + ".",
        images=[image.crop((left, top, right, bottom))],
        info={"box": list(box), "clamped": clamped},
    )


def unsharp_mask(pixels: np.ndarray, amount: float, sigma: float) -> np.ndarray:
    """``(1 + amount) * img - amount * GaussianBlur(img, sigma)``, saturated to uint8 (any channel order)."""
    import cv2

    blurred = cv2.GaussianBlur(pixels, (0, 0), sigmaX=sigma)
    return cv2.addWeighted(pixels, 1.0 + amount, blurred, -amount, 0)


def sharpen_image(arguments: dict[str, Any], store: ImageStore) -> ToolResult:
    """Unsharp mask with ``amount`` (default 1.5) and a Gaussian blur of sigma 3."""
    ref = arguments["image"]
    amount = float(arguments.get("amount", 1.5))
    if not 0 <= amount <= 10:
        raise ToolError("bad_arguments", f"sharpen: amount must be between 0 and 10, got {amount}")
    out = unsharp_mask(_rgb(store.get(ref)), amount, 3.0)
    return ToolResult(
        text=f"Sharpened {ref} with an unsharp mask (amount {amount:g}, blur sigma 3).",
        images=[_pil(out)],
        info={"amount": amount, "sigma": 3.0},
    )


class SuperResolver:
    """Upscaling: an OpenCV dnn_superres model when configured (for its trained scale), else Lanczos + edge
    enhancement. The observation always names the method used."""

    def __init__(self, settings: SuperResolutionSettings) -> None:
        self.settings = settings
        self._model = None
        if settings.model_path:
            import os

            import cv2

            if not hasattr(cv2, "dnn_superres"):
                raise PrerequisiteError(
                    "super_resolution.model_path is set but OpenCV lacks dnn_superres; "
                    "pip install 'opensearch-vl[superres]' (opencv-contrib-python-headless)"
                )
            if not os.path.isfile(settings.model_path):
                raise ConfigError(
                    f"super_resolution.model_path {settings.model_path!r} does not exist; point it "
                    "at an EDSR/ESPCN/FSRCNN/LapSRN .pb file or unset it for the classical method"
                )
            model = cv2.dnn_superres.DnnSuperResImpl_create()
            model.readModel(settings.model_path)
            model.setModel(settings.model_name, settings.model_scale)
            self._model = model

    def __call__(self, arguments: dict[str, Any], store: ImageStore) -> ToolResult:
        import cv2

        ref = arguments["image"]
        scale = int(arguments.get("scale", 4))
        if not 2 <= scale <= 4:
            raise ToolError("bad_arguments", f"super_resolution: scale must be 2, 3 or 4, got {scale}")
        image = store.get(ref)
        out_pixels = image.width * image.height * scale * scale
        if out_pixels > self.settings.max_output_pixels:
            raise ToolError(
                "bad_arguments",
                f"super_resolution: {ref} is {image.width}x{image.height}; x{scale} "
                f"would give {out_pixels} pixels, over the limit of "
                f"{self.settings.max_output_pixels}; crop the region of interest first",
            )
        rgb = _rgb(image)
        if self._model is not None and scale == self.settings.model_scale:
            out = self._model.upsample(np.ascontiguousarray(rgb[:, :, ::-1]))[:, :, ::-1]  # models expect BGR
            out = np.ascontiguousarray(out)
            method, kind = f"learned model {self.settings.model_name.upper()} x{scale}", "learned"
        else:
            upscaled = cv2.resize(
                rgb, (image.width * scale, image.height * scale), interpolation=cv2.INTER_LANCZOS4
            )
            out = unsharp_mask(upscaled, 0.5, 1.0)
            kind = "classical"
            method = "classical Lanczos upscaling with edge enhancement (no learned model"
            method += " for this scale)" if self._model is not None else " configured)"
        return ToolResult(
            text=f"Upscaled {ref} x{scale} from {image.width}x{image.height} "
            f"to {out.shape[1]}x{out.shape[0]} "
            f"using {method}.",
            images=[_pil(out)],
            info={"scale": scale, "method": kind},
        )


def _order_corners(points: np.ndarray) -> np.ndarray:
    sums, diffs = points.sum(axis=1), np.diff(points, axis=1).ravel()
    return np.array(
        [
            points[np.argmin(sums)],
            points[np.argmin(diffs)],
            points[np.argmax(sums)],
            points[np.argmax(diffs)],
        ],
        dtype=np.float32,
    )


def find_quadrilateral(rgb: np.ndarray, min_area_fraction: float = 0.1) -> np.ndarray | None:
    """Corners (tl, tr, br, bl) of the largest convex 4-gon covering enough of the image, or ``None``."""
    import cv2

    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    edges = cv2.Canny(cv2.GaussianBlur(gray, (5, 5), 0), 75, 200)
    edges = cv2.dilate(edges, np.ones((3, 3), np.uint8))
    contours, _ = cv2.findContours(edges, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    min_area = min_area_fraction * gray.shape[0] * gray.shape[1]
    for contour in sorted(contours, key=cv2.contourArea, reverse=True)[:5]:
        approx = cv2.approxPolyDP(contour, 0.02 * cv2.arcLength(contour, True), True)
        if len(approx) == 4 and cv2.isContourConvex(approx) and cv2.contourArea(approx) >= min_area:
            return _order_corners(approx.reshape(4, 2).astype(np.float32))
    return None


def correct_perspective(arguments: dict[str, Any], store: ImageStore) -> ToolResult:
    """Warp the largest document-like quadrilateral to a rectangle; no quadrilateral → text-only result."""
    import cv2

    ref = arguments["image"]
    image = store.get(ref)
    rgb = _rgb(image)
    corners = find_quadrilateral(rgb)
    if corners is None:
        return ToolResult(
            text=f"No document-like quadrilateral was found in {ref}, so no corrected image was made; "
            f"{ref} is "
            "unchanged. Try crop to isolate the object, or continue with the original image.",
            info={"corrected": False},
        )
    tl, tr, br, bl = corners
    width = int(round(max(np.linalg.norm(br - bl), np.linalg.norm(tr - tl))))
    height = int(round(max(np.linalg.norm(tr - br), np.linalg.norm(tl - bl))))
    target = np.array([[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]], dtype=np.float32)
    warped = cv2.warpPerspective(
        rgb, cv2.getPerspectiveTransform(corners, target), (width, height), flags=cv2.INTER_CUBIC
    )
    points = ", ".join(f"({int(px)}, {int(py)})" for px, py in corners)
    return ToolResult(
        text=f"Perspective-corrected {ref}: warped the quadrilateral with corners {points} "
        f"to a {width}x{height} frontal view.",
        images=[_pil(warped)],
        info={"corrected": True, "corners": corners.round(1).tolist()},
    )


@register_tool("crop")
def make_crop(config: ToolEnvConfig, cache: Any = None) -> FunctionTool:
    """The crop tool."""
    return FunctionTool(CROP, crop_image)


@register_tool("sharpen")
def make_sharpen(config: ToolEnvConfig, cache: Any = None) -> FunctionTool:
    """The sharpen tool."""
    return FunctionTool(SHARPEN, sharpen_image)


@register_tool("super_resolution")
def make_super_resolution(config: ToolEnvConfig, cache: Any = None) -> FunctionTool:
    """The super_resolution tool (model loaded here, once, when configured)."""
    return FunctionTool(SUPER_RESOLUTION, SuperResolver(config.super_resolution))


@register_tool("perspective_correct")
def make_perspective_correct(config: ToolEnvConfig, cache: Any = None) -> FunctionTool:
    """The perspective_correct tool."""
    return FunctionTool(PERSPECTIVE_CORRECT, correct_perspective)
