"""Built-in benchmark loaders; importing this package registers them (done lazily by the registry)."""

from opensearch_vl.eval.benchmarks import deep_research, mini, mmsearch_r1, vqa_sets  # noqa: F401
