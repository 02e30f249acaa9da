"""Register prepared RL rows with rLLM's ``DatasetRegistry`` (rLLM installed from source).

Example:
    >>> register_rllm_dataset("searchvl-rl", {"train": Path("data/rl/rllm/train.jsonl")})  # doctest: +SKIP
    {'train': '/root/.rllm/datasets/searchvl-rl/train_verl.parquet'}
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["register_rllm_dataset"]


def register_rllm_dataset(name: str, files: dict[str, Path]) -> dict[str, str]:
    """Register each split's JSONL rows under ``name``; returns the verl parquet path rLLM
    made for each split.

    rLLM stores under ``$RLLM_HOME`` (set it before the first ``import rllm``), and hands each row to the
    workflow as ``task`` at training time.
    """
    from rllm.data.dataset import DatasetRegistry

    out = {}
    for split, path in files.items():
        rows = [
            json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()
        ]
        dataset = DatasetRegistry.register_dataset(
            name,
            rows,
            split,
            source=str(path),
            description="OpenSearch-VL RL rows (opensearch-vl rl prepare)",
        )
        out[split] = str(dataset.get_verl_data_path())
    return out
