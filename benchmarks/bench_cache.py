"""Replay-cache hit latency (goal < 1 ms) vs calling a trivial in-process service directly.

Records N responses of realistic size (a Serper-like JSON of ~3 KB), then times hits in replay mode, single
thread, and reports p50/p99 and the ratio to the direct call (the cost the cache adds per hit).

Run: python benchmarks/bench_cache.py [--entries 5000] [--lookups 20000]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from opensearch_vl.tools_env.cache import ResultCache


class FakeSerper:
    """Returns a Serper-shaped response built from the query (stands in for the network)."""

    name = "serper_search"

    def call(self, request):
        q = request["q"]
        return {
            "searchParameters": request,
            "organic": [
                {
                    "title": f"{q} result {i}",
                    "link": f"https://example.org/{q}/{i}",
                    "snippet": f"A snippet of about two hundred characters describing result {i} for {q}. "
                    * 3,
                    "position": i,
                }
                for i in range(1, 11)
            ],
        }


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main(entries: int, lookups: int) -> None:
    path = Path(tempfile.mkdtemp()) / "bench_cache.sqlite"
    service = FakeSerper()
    recorder = ResultCache(path).wrap(service, tool="text_search")
    start = time.perf_counter()
    for i in range(entries):
        recorder.call({"q": f"query {i}", "hl": "en", "gl": "us", "num": 10})
    record_s = time.perf_counter() - start
    recorder.cache.close()

    replay = ResultCache(path, mode="replay").wrap(service, tool="text_search")
    rng = random.Random(0)
    requests = [
        {"q": f"query {rng.randrange(entries)}", "hl": "en", "gl": "us", "num": 10} for _ in range(lookups)
    ]
    for request in requests[:200]:  # warm the page cache
        replay.call(request)
    hit_times, direct_times = [], []
    for request in requests:
        start = time.perf_counter()
        replay.call(request)
        hit_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        service.call(request)
        direct_times.append(time.perf_counter() - start)
    stats = replay.cache.stats()
    p50, p99 = percentile(hit_times, 0.5) * 1e3, percentile(hit_times, 0.99) * 1e3
    direct = statistics.median(direct_times) * 1e3
    print(
        f"recorded {entries} entries in {record_s:.2f}s ({record_s / entries * 1e3:.3f} ms per write); "
        f"file {path.stat().st_size / 1e6:.1f} MB"
    )
    print(
        f"replay hit latency: p50 {p50:.3f} ms, p99 {p99:.3f} ms, "
        f"mean {statistics.mean(hit_times) * 1e3:.3f} ms "
        f"over {lookups} hits (goal < 1 ms): {'OK' if p50 < 1 else 'MISSED'}"
    )
    print(
        f"direct in-process call (building the same response): p50 {direct:.3f} ms; "
        f"hit/direct = {p50 / direct:.2f}x"
    )
    print(f"stats: hits={stats.hits} misses={stats.misses} entries={stats.entries}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=5000)
    parser.add_argument("--lookups", type=int, default=20000)
    args = parser.parse_args()
    main(args.entries, args.lookups)
