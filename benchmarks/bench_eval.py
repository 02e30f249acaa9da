"""Throughput of the eval harness: 500 cases x 5 turns against a loopback policy server answering in 50 ms.

The server (aiohttp, in a thread) plays an OpenAI-compatible endpoint: turns 1-4 call the real ``crop`` tool on
the task image, turn 5 answers. The harness runs the full path (loader, episode runner, tool environment,
judge, atomic transcript writes) at concurrency 64. The ideal wall time is the policy latency alone:
cases x turns x 50 ms / concurrency. Prints the measured time and the ratio (goal <= 1.5x).

    python benchmarks/bench_eval.py [--cases 500] [--turns 5] [--latency 0.05] [--concurrency 64]
"""

import argparse
import asyncio
import json
import multiprocessing
import os
import tempfile
import time
from pathlib import Path

from aiohttp import web
from opensearch_vl.eval.run import EvalRunConfig, run_eval
from PIL import Image


def _serve(latency: float, turns: int, port_queue) -> None:
    async def handle(request):
        body = await request.json()
        n_assistant = sum(1 for m in body["messages"] if m["role"] == "assistant")
        await asyncio.sleep(latency)
        if n_assistant + 1 < turns:
            text = (
                '<think>zoom</think><tool_call>{"name": "crop", "arguments": {"image": "img_1", "x": 0, '
                '"y": 0, "width": 16, "height": 16}}</tool_call>'
            )
        else:
            text = "<think>done</think><response>ans</response>"
        return web.json_response(
            {
                "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "model": "bench",
            }
        )

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handle)
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app, access_log=None)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
    loop.run_until_complete(site.start())
    port_queue.put(site._server.sockets[0].getsockname()[1])
    loop.run_forever()


def _server(latency: float, turns: int) -> tuple[str, multiprocessing.Process]:
    # A separate process, so the server does not compete with the harness for the GIL.
    queue = multiprocessing.Queue()
    proc = multiprocessing.Process(target=_serve, args=(latency, turns, queue), daemon=True)
    proc.start()
    return f"http://127.0.0.1:{queue.get(timeout=30)}/v1", proc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    url, server = _server(args.latency, args.turns)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        Image.new("RGB", (64, 48), (30, 60, 90)).save(root / "img.png")
        (root / "bc_vl_level1.jsonl").write_text(
            "".join(
                json.dumps({"question": f"Question {i}?", "image_path": "img.png", "answers": ["ans"]}) + "\n"
                for i in range(args.cases)
            )
        )
        config = EvalRunConfig(
            benchmark="browsecomp_vl",
            data=str(root / "bc_vl_level1.jsonl"),
            model=url,
            out=str(root / "run"),
            tools=["crop"],
            cache_mode="off",
            concurrency=args.concurrency,
            max_turns=args.turns + 1,
        )
        start, cpu = time.perf_counter(), time.process_time()
        summary = run_eval(config, progress=False)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    server.terminate()
    ideal = args.cases * args.turns * args.latency / args.concurrency
    print(
        f"cases={summary.ran} correct={summary.correct} turns/case={args.turns} latency={args.latency * 1000:.0f}ms "
        f"concurrency={args.concurrency}"
    )
    print(f"harness CPU time {cpu:.2f} s on {os.cpu_count()} cores (the server runs in another process)")
    print(f"wall time {wall:.2f} s; ideal {ideal:.2f} s; ratio {wall / ideal:.2f}x (goal <= 1.5x)")


if __name__ == "__main__":
    main()
