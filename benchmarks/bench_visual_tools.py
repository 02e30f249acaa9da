"""Visual tools through our layers vs the raw OpenCV/PIL operation, on 1024² and 2048² images.

Three timings per tool and size (best of N interleaved runs, which is robust on a shared, loaded machine):
  raw   the same OpenCV/PIL calls the tool makes, on an array/image already in memory (the baseline);
  tool  ``await tool.run(args, store)``: FunctionTool -> thread -> PIL<->numpy -> op (goal <= 1.3x raw);
  env   ``ToolEnvironment.execute``: + argument validation + storing the new image (canonical PNG + SHA-256).

Run: python benchmarks/bench_visual_tools.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import asyncio
import time

import cv2
import numpy as np
from opensearch_vl.tools_env.config import ToolEnvConfig
from opensearch_vl.tools_env.environment import ToolEnvironment
from opensearch_vl.tools_env.images import ImageStore
from opensearch_vl.tools_env.tool import tool_factory
from opensearch_vl.tools_env.tools.visual import find_quadrilateral, unsharp_mask
from PIL import Image


def warp_largest_quad(pixels: np.ndarray) -> np.ndarray:
    tl, tr, br, bl = corners = find_quadrilateral(pixels)
    width = int(round(max(np.linalg.norm(br - bl), np.linalg.norm(tr - tl))))
    height = int(round(max(np.linalg.norm(tr - br), np.linalg.norm(tl - bl))))
    target = np.float32([[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]])
    return cv2.warpPerspective(
        pixels, cv2.getPerspectiveTransform(corners, target), (width, height), flags=cv2.INTER_CUBIC
    )


def test_image(size: int) -> Image.Image:
    rng = np.random.default_rng(0)
    base = cv2.resize(
        rng.integers(0, 90, (size // 16, size // 16, 3), dtype=np.uint8),
        (size, size),
        interpolation=cv2.INTER_CUBIC,
    )
    page = np.int32(
        [
            [size * 0.2, size * 0.15],
            [size * 0.8, size * 0.2],
            [size * 0.75, size * 0.85],
            [size * 0.25, size * 0.8],
        ]
    )
    cv2.fillPoly(base, [page], (250, 250, 250))  # a tilted page, so perspective_correct has work to do
    return Image.fromarray(base)


def raw_ops(image: Image.Image):
    bgr = np.asarray(image)  # channel order does not matter to these operations
    size = image.width
    return {
        "crop": lambda: image.crop((size // 4, size // 4, 3 * size // 4, 3 * size // 4)),
        "sharpen": lambda: unsharp_mask(bgr, 1.5, 3.0),
        "super_resolution": lambda: unsharp_mask(
            cv2.resize(bgr, (size * 2, size * 2), interpolation=cv2.INTER_LANCZOS4), 0.5, 1.0
        ),
        "perspective_correct": lambda: warp_largest_quad(bgr),
    }


def args_for(name: str, size: int) -> dict:
    if name == "crop":
        return {"image": "img_1", "x": size // 4, "y": size // 4, "width": size // 2, "height": size // 2}
    if name == "super_resolution":
        return {"image": "img_1", "scale": 2}
    return {"image": "img_1"}


async def main(repeat: int) -> None:
    config = ToolEnvConfig()
    names = ["crop", "sharpen", "super_resolution", "perspective_correct"]
    env = ToolEnvironment(config.model_copy(update={"tools": names}))
    tools = {n: tool_factory(n)(config, None) for n in names}
    print(
        f"{'tool':<20}{'size':>6}{'raw ms':>10}{'tool ms':>10}{'tool/raw':>10}{'overhead ms':>12}"
        f"{'env ms':>10}{'env/raw':>10}"
    )
    for size in (1024, 2048):
        image = test_image(size)
        store = ImageStore()
        store.add(image)
        raws = raw_ops(image)
        for name in names:
            args = args_for(name, size)
            raw_times, tool_times, env_times = [], [], []
            for _ in range(repeat):
                start = time.perf_counter()
                raws[name]()
                raw_times.append(time.perf_counter() - start)
                start = time.perf_counter()
                await tools[name].run(args, store)
                tool_times.append(time.perf_counter() - start)
                env_store = env.new_store()
                env_store.add(image)
                start = time.perf_counter()
                outcome = await env.execute(name, args, env_store)
                env_times.append(time.perf_counter() - start)
                assert not outcome.error, outcome.text
            raw, tool_t, env_t = min(raw_times), min(tool_times), min(env_times)
            print(
                f"{name:<20}{size:>6}{raw * 1e3:>10.2f}{tool_t * 1e3:>10.2f}{tool_t / raw:>9.2f}x"
                f"{(tool_t - raw) * 1e3:>12.2f}{env_t * 1e3:>10.2f}{env_t / raw:>9.2f}x"
            )
    await env.aclose()
    print("env adds validation and storing the produced image (pixel hash; PNG is encoded only when saved) to tool.")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    asyncio.run(main(parser.parse_args().repeat))
