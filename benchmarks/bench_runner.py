"""Episode-runner throughput: many concurrent episodes against the ideal wall time.

Each episode has ``--turns`` model turns (all but the last call a tool, the last answers). The policy takes
``--policy-ms`` per turn and each tool call ``--tool-ms``. With unlimited parallelism the whole batch would
take as long as one episode: ``turns * policy + (turns - 1) * tool`` — that is the baseline. The ratio
measured / ideal shows what the runner, parser, image store and scheduling cost (goal: <= 1.5x).

Three tool kinds are measured:

- ``async``: the tool awaits (an HTTP backend: search, visit, OCR endpoint);
- ``thread``: the tool blocks a worker thread (a synchronous backend), in the environment's I/O pool of
  ``DEFAULT_TOOL_THREADS`` threads;
- ``thread-wide``: the same, with the pool sized to the number of episodes (``tool_threads=``).

Run:
    python benchmarks/bench_runner.py    # 256 episodes x 10 turns, 50 ms policy, 20 ms tools
    python benchmarks/bench_runner.py --episodes 64 --turns 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time

from opensearch_vl.tools_env import (
    EpisodeLimits,
    FunctionTool,
    ScriptedPolicy,
    Task,
    ToolEnvironment,
    ToolResult,
    ToolSpec,
    run_episodes,
)
from opensearch_vl.tools_env.environment import DEFAULT_TOOL_THREADS
from PIL import Image

SPEC = {
    "type": "object",
    "properties": {"q": {"type": "string"}, "top_k": {"type": "integer", "default": 5}},
    "required": ["q"],
    "additionalProperties": False,
}
RESULT_TEXT = "[Passage 1]\nTitle: A result\nURL: https://example.org/a\nSummary:\n" + "lorem ipsum " * 40


def make_tool(kind: str, seconds: float) -> FunctionTool:
    if kind == "async":

        async def run(args, store):
            await asyncio.sleep(seconds)
            return ToolResult(text=RESULT_TEXT)
    else:

        def run(args, store):
            time.sleep(seconds)
            return ToolResult(text=RESULT_TEXT)

    return FunctionTool(ToolSpec("search", "A search that takes a fixed time.", SPEC), run)


async def measure(kind: str, episodes: int, turns: int, policy_s: float, tool_s: float) -> tuple[float, list]:
    threads = episodes if kind == "thread-wide" else DEFAULT_TOOL_THREADS
    env = ToolEnvironment(tools=[make_tool(kind, tool_s)], tool_threads=threads)
    call = (
        '<think>I should search for this.</think>\n<tool_call>\n{"name": "search", "arguments": '
        '{"q": "who designed this building"}}\n</tool_call>'
    )
    script = [call] * (turns - 1) + ["<think>Found it.</think>\n<response>Gustave Eiffel</response>"]
    policy = ScriptedPolicy(script, delay_s=policy_s, record=False)
    tasks = [
        Task(
            id=f"b{i}",
            question="Who designed the building in the image?",
            images=[Image.new("RGB", (64, 64), (i % 256, 0, 0))],
        )
        for i in range(episodes)
    ]
    start = time.perf_counter()
    transcripts = await run_episodes(
        policy, tasks, env, concurrency=episodes, limits=EpisodeLimits(max_turns=turns)
    )
    elapsed = time.perf_counter() - start
    await env.aclose()
    return elapsed, transcripts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=256)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--policy-ms", type=float, default=50.0)
    parser.add_argument("--tool-ms", type=float, default=20.0)
    parser.add_argument("--kinds", nargs="+", default=["async", "thread", "thread-wide"])
    args = parser.parse_args()
    policy_s, tool_s = args.policy_ms / 1000, args.tool_ms / 1000
    ideal = args.turns * policy_s + (args.turns - 1) * tool_s
    print(
        f"{args.episodes} concurrent episodes x {args.turns} turns, policy {args.policy_ms:g} ms, "
        f"tools {args.tool_ms:g} ms, {os.cpu_count()} CPUs; ideal wall time {ideal:.3f} s"
    )
    rows = []
    for kind in args.kinds:
        cpu_start = time.process_time()
        elapsed, transcripts = asyncio.run(measure(kind, args.episodes, args.turns, policy_s, tool_s))
        cpu = time.process_time() - cpu_start
        bad = [t.termination for t in transcripts if t.termination != "answer"]
        if bad or any(len(t.steps) != args.turns for t in transcripts):
            raise SystemExit(f"{kind}: episodes did not run as scripted: {bad[:3]}")
        turns_total = args.episodes * args.turns
        rows.append(
            {
                "tools": kind,
                "wall_s": round(elapsed, 3),
                "ratio_vs_ideal": round(elapsed / ideal, 2),
                "cpu_us_per_turn": round(cpu / turns_total * 1e6),
            }
        )
        print(
            f"  {kind:<12} wall {elapsed:6.3f} s   ratio {elapsed / ideal:5.2f}x   "
            f"CPU {cpu / turns_total * 1e6:6.0f} us per turn"
        )
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
