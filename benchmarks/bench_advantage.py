"""fatal_grpo vs verl's own grpo estimator, same batch, same run.

Times the estimator functions alone and the full verl path (``ray_trainer.compute_advantage``, which for
fatal_grpo includes the registry lookup, the caller-frame flag bridge, config parsing and the metrics).
Goal: fatal_grpo / grpo ≤ 1.0.

    python benchmarks/bench_advantage.py                 # 2048 × 8192 (n=8) and 256 × 70000 (n=16)
    python benchmarks/bench_advantage.py --repeats 3 --shapes 2048x8192x8
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from omegaconf import OmegaConf
from opensearch_vl.rl.advantage import FatalAdvantageConfig, fatal_group_advantage
from verl import DataProto
from verl.trainer.ppo import core_algos
from verl.trainer.ppo.ray_trainer import compute_advantage


def rollout_batch(rows: int, length: int, group: int, seed: int = 0) -> DataProto:
    """Right-padded responses of random length, observation gaps, 10% fatal rows with a masked tail."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(length // 4, length + 1, (rows,), generator=g)
    pos = torch.arange(length)
    mask = (pos[None, :] < lengths[:, None]).to(torch.int64)
    mask[:, length // 3 : length // 3 + length // 20] = 0  # an observation span
    fatal = torch.rand(rows, generator=g) < 0.1
    cut = (lengths.float() * 0.6).long()
    mask[fatal] *= (pos[None, :] < cut[fatal, None]).to(torch.int64)
    rewards = torch.zeros(rows, length)
    rewards[torch.arange(rows), lengths - 1] = torch.randint(0, 5, (rows,), generator=g).float() / 4
    uid = np.array([f"prompt-{i // group}" for i in range(rows)], dtype=object)
    return DataProto.from_dict(
        tensors={"token_level_rewards": rewards, "response_mask": mask},
        non_tensors={"uid": uid, "is_fatal": fatal.numpy()},
    )


def median_seconds(fns: dict, repeats: int) -> dict[str, float]:
    """Round-robin (A, B, C, A, B, C, ...) so drift and allocator state hit every candidate alike."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for name, fn in fns.items():
        fn()  # warm-up
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def bench(rows: int, length: int, group: int, repeats: int) -> None:
    data = rollout_batch(rows, length, group)
    r, m = data.batch["token_level_rewards"], data.batch["response_mask"]
    uid, fatal = data.non_tensor_batch["uid"], data.non_tensor_batch["is_fatal"]
    cfg = OmegaConf.create({"norm_adv_by_std_in_grpo": True})
    timings = {
        "verl grpo (fn)": lambda: core_algos.compute_grpo_outcome_advantage(r, m, uid),
        "verl grpo_vectorized (fn)": lambda: core_algos.compute_grpo_vectorized_outcome_advantage(r, m, uid),
        "fatal_grpo (fn)": lambda: fatal_group_advantage(r, m, uid, fatal, FatalAdvantageConfig()),
        "verl rloo (fn)": lambda: core_algos.compute_rloo_outcome_advantage(r, m, uid),
        "fatal_rloo (fn)": lambda: fatal_group_advantage(r, m, uid, fatal, FatalAdvantageConfig(), "rloo"),
        "compute_advantage grpo": lambda: compute_advantage(data, adv_estimator="grpo", config=cfg),
        "compute_advantage fatal_grpo": lambda: compute_advantage(
            data, adv_estimator="fatal_grpo", config=cfg
        ),
    }
    results = median_seconds(timings, repeats)
    print(
        f"\n{rows} rows × {length} tokens, groups of {group}, {int(fatal.sum())} fatal "
        f"(median of {repeats}, torch threads {torch.get_num_threads()})"
    )
    for name, secs in results.items():
        print(f"  {name:32s} {secs * 1e3:9.1f} ms")
    for ours, theirs in [
        ("fatal_grpo (fn)", "verl grpo (fn)"),
        ("fatal_rloo (fn)", "verl rloo (fn)"),
        ("compute_advantage fatal_grpo", "compute_advantage grpo"),
    ]:
        print(f"  ratio {ours} / {theirs}: {results[ours] / results[theirs]:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument(
        "--shapes", nargs="+", default=["2048x8192x8", "256x70000x16"], help="ROWSxLENGTHxGROUP"
    )
    args = parser.parse_args()
    for shape in args.shapes:
        bench(*map(int, shape.split("x")), repeats=args.repeats)


if __name__ == "__main__":
    main()
