"""Local search on a synthetic 100k-document corpus: index build time and query latency (goal p50 < 5 ms).

Documents are 60 tokens drawn from a Zipf-distributed 20k-word vocabulary; queries are 3 random words (OR).
Baseline measured in the same run: the bare FTS5 ``MATCH … ORDER BY rank LIMIT 10`` on the same file,
without our query sanitizing, title weighting, snippets and join.

Run: python benchmarks/bench_search.py [--docs 100000] [--queries 300]
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import tempfile
import time
from pathlib import Path

from opensearch_vl.tools_env.backends.search_index import CorpusIndex, build_corpus_index


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def make_corpus(path: Path, docs: int, rng: random.Random) -> list[str]:
    vocabulary = [f"w{i}{''.join(rng.choice('abcdefghij') for _ in range(3))}" for i in range(20_000)]
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    with path.open("w", encoding="utf-8") as fh:
        for i in range(docs):
            words = rng.choices(vocabulary, weights, k=60)
            fh.write(
                json.dumps(
                    {
                        "url": f"https://synthetic.example/{i}",
                        "title": " ".join(words[:5]),
                        "text": " ".join(words[5:]),
                    }
                )
                + "\n"
            )
    return vocabulary


def main(docs: int, queries: int) -> None:
    rng = random.Random(0)
    folder = Path(tempfile.mkdtemp())
    corpus, index_path = folder / "corpus.jsonl", folder / "index.sqlite"
    vocabulary = make_corpus(corpus, docs, rng)
    start = time.perf_counter()
    build_corpus_index(corpus, index_path)
    build_s = time.perf_counter() - start
    index = CorpusIndex(index_path)
    raw = sqlite3.connect(f"file:{index_path}?mode=ro", uri=True)
    qs = [" ".join(rng.choices(vocabulary[:5000], k=3)) for _ in range(queries)]
    for q in qs[:20]:
        index.search(q, 10)
    ours, bare = [], []
    for q in qs:
        start = time.perf_counter()
        hits = index.search(q, 10)
        ours.append(time.perf_counter() - start)
        expression = " OR ".join(q.split())
        start = time.perf_counter()
        raw.execute(
            "SELECT rowid FROM docs_fts WHERE docs_fts MATCH ? ORDER BY rank LIMIT 10", (expression,)
        ).fetchall()
        bare.append(time.perf_counter() - start)
        assert len(hits) <= 10
    p50, p95 = percentile(ours, 0.5) * 1e3, percentile(ours, 0.95) * 1e3
    b50 = percentile(bare, 0.5) * 1e3
    print(f"{docs} docs: build {build_s:.1f}s, index {index_path.stat().st_size / 1e6:.0f} MB")
    print(
        f"CorpusIndex.search top-10: p50 {p50:.2f} ms, p95 {p95:.2f} ms (goal p50 < 5 ms): "
        f"{'OK' if p50 < 5 else 'MISSED'}"
    )
    print(f"bare FTS5 MATCH baseline: p50 {b50:.2f} ms; ours/bare = {p50 / b50:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    main(args.docs, args.queries)
