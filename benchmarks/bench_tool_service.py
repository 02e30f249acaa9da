"""2,048 concurrent tool calls through the Ray tool pool vs calling the tools in-process (ratio printed).

    python benchmarks/bench_tool_service.py [--calls 2048] [--actors 2] [--tool sharpen] [--size 256]

Both sides run the same real tool (default ``sharpen``, OpenCV unsharp mask) on the same image, all calls
issued at once (``asyncio.gather``). In-process: one ``ToolEnvironment`` (CPU work in worker threads). Ray: a
:class:`~opensearch_vl.rl.tool_service.RemoteToolEnvironment` over ``--actors`` tool actors, with the image
shipped as a raw RGB array each call and the produced image shipped back. The ratio is Ray wall
time / in-process wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from PIL import Image


def image(size: int) -> Image.Image:
    import numpy as np

    rng = np.random.default_rng(0)
    return Image.fromarray(rng.integers(0, 255, (size, size, 3), dtype=np.uint8))


async def burst(env, tool: str, calls: int, size: int) -> float:
    stores = []
    for _ in range(calls):
        store = env.new_store()
        store.add(image(size))
        stores.append(store)
    began = time.perf_counter()
    outcomes = await asyncio.gather(*(env.execute(tool, {"image": "img_1"}, s) for s in stores))
    elapsed = time.perf_counter() - began
    errors = [o.text for o in outcomes if o.error]
    if errors:
        raise SystemExit(f"{len(errors)} calls failed, first: {errors[0]}")
    assert all(len(s) == 2 for s in stores), "every call should add its image to its store"
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2048)
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--tool", default="sharpen")
    parser.add_argument("--size", type=int, default=256)
    args = parser.parse_args()

    import ray
    from opensearch_vl.rl.agent import ToolServiceSettings
    from opensearch_vl.rl.tool_service import RemoteToolEnvironment, start_tool_pool
    from opensearch_vl.tools_env.config import ToolEnvConfig
    from opensearch_vl.tools_env.environment import ToolEnvironment

    config = ToolEnvConfig(tools=[args.tool])
    local = ToolEnvironment(config)
    asyncio.run(burst(local, args.tool, 16, args.size))  # warm-up
    t_local = asyncio.run(burst(local, args.tool, args.calls, args.size))

    ray.init(num_cpus=max(2, args.actors), include_dashboard=False, log_to_driver=False)
    service = ToolServiceSettings(
        mode="ray", num_actors=args.actors, max_concurrent_calls=args.calls, name="bench_tools"
    )
    remote = RemoteToolEnvironment(config, start_tool_pool(config, service))
    asyncio.run(burst(remote, args.tool, 16, args.size))  # warm-up: actors started, tools built
    t_ray = asyncio.run(burst(remote, args.tool, args.calls, args.size))
    ray.shutdown()

    print(f"{args.calls} concurrent {args.tool} calls on {args.size}x{args.size} images")
    print(f"  in-process : {t_local:7.2f} s  ({args.calls / t_local:8.1f} calls/s)")
    print(f"  ray pool   : {t_ray:7.2f} s  ({args.calls / t_ray:8.1f} calls/s, {args.actors} actors)")
    print(f"  ratio ray/in-process: {t_ray / t_local:.2f}x")


if __name__ == "__main__":
    main()
