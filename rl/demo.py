"""The RL stage in miniature (the README main job): rollouts, rewards, fatal-aware advantages, one table.

On the bundled mini benchmark (``eval/data/mini``) each task gets a group of rollouts against the real offline
tool environment, driven token-in/token-out over the local Qwen3-VL's processor: rollouts sampled from the
model itself (:func:`local_generate_fn`, the seam sglang fills during training), and scripted ones that show
every case of the clamp (the oracle's turns, a failing-call cascade after a good first step, one that fails
from its first step, one that answers wrong). Each rollout is scored with Eq. 9, turned into the same row the verl
agent loop emits, and the group's advantages come from ``advantage_fn`` — the CLI passes verl's own
``compute_advantage`` with ``fatal_grpo`` (``opensearch_vl.plugins.verl.agent_loop.fatal_advantages``).

Example:
    >>> result = asyncio.run(run_demo("runs/rl-demo", advantage_fn=fatal_advantages))  # doctest: +SKIP
    >>> print(result.table())  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opensearch_vl.rl.agent import RLAgentSettings, build_reward, rollout, task_from_row
from opensearch_vl.rl.token_policy import GenerateFn, Generation, TokenPolicy
from opensearch_vl.rl.tokenize import ChatRenderer, TokenRow
from opensearch_vl.rl.workflow_core import ScoredEpisode
from opensearch_vl.tools_env.environment import ToolEnvironment
from opensearch_vl.tools_env.transcript import Transcript

__all__ = ["DemoRow", "DemoResult", "run_demo", "local_generate_fn", "AdvantageFn", "MINI_DIR"]

MINI_DIR = Path(__file__).resolve().parents[1] / "eval" / "data" / "mini"
"""The bundled mini benchmark (images, questions, oracle turns)."""

AdvantageFn = Callable[[Sequence[TokenRow], Sequence[ScoredEpisode], Sequence[str]], list[float]]
"""``(rows, scored, group_ids) -> per-row advantage`` (the scalar on the row's trainable tokens)."""

_BAD_CALL = (
    '<think>Let me search.</think>\n<tool_call>\n{"name": "text_search", "arguments": {"q": }}\n</tool_call>'
)
_WRONG = "<think>I am fairly sure.</think>\n<response>I do not know. \\boxed{unknown}</response>"


@dataclass(frozen=True)
class DemoRow:
    """One rollout of the demo table."""

    task_id: str
    variant: str
    termination: str
    steps: int
    fatal_step: int | None
    is_fatal: bool
    r_fmt: float
    r_acc: float
    r_query: float
    reward: float
    trainable_tokens: int
    images: int
    advantage: float
    clamped: bool


@dataclass(frozen=True)
class DemoResult:
    """The demo's rows and where its transcripts were written."""

    rows: list[DemoRow]
    out_dir: Path

    def table(self) -> str:
        """A fixed-width table: reward components, fatal step, clamp."""
        head = (
            f"{'task':<20} {'rollout':<14} {'end':<14} {'steps':>5} {'fatal@':>6} {'r_fmt':>6} {'r_acc':>5} "
            f"{'r_q':>4} {'reward':>6} {'train_tok':>9} {'imgs':>4} {'adv':>7} clamp"
        )
        lines = [head, "-" * len(head)]
        for r in self.rows:
            fatal = "-" if r.fatal_step is None else str(r.fatal_step)
            lines.append(
                f"{r.task_id:<20} {r.variant:<14} {r.termination:<14} {r.steps:>5} {fatal:>6} "
                f"{r.r_fmt:>6.2f} {r.r_acc:>5.1f} {r.r_query:>4.1f} {r.reward:>6.3f} {r.trainable_tokens:>9} "
                f"{r.images:>4} {r.advantage:>+7.3f} {'yes' if r.clamped else ''}"
            )
        return "\n".join(lines)


def local_generate_fn(
    model_dir: str | Path, *, max_new_tokens: int = 48, temperature: float = 0.7, seed: int = 0
) -> GenerateFn:
    """A token backend over a local Qwen3-VL checkpoint: ``async (prompt_ids, images) -> Generation``.

    It sees exactly what a rollout server sees (prompt ids with expanded image-pad tokens, every image of
    the conversation) and never emits vision tokens, which would leave image tokens without images.

    Example:
        >>> generate = local_generate_fn("runs/sft_smoke")  # doctest: +SKIP
    """
    import threading

    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    processor = AutoProcessor.from_pretrained(str(model_dir))
    model = AutoModelForImageTextToText.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    tokenizer = processor.tokenizer
    vision = ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>", "<|vision_pad|>")
    banned = [[tokenizer.convert_tokens_to_ids(t)] for t in vision if t in tokenizer.get_vocab()]
    generator_lock = threading.Lock()
    torch.manual_seed(seed)

    def _generate(prompt_ids: list[int], images: list[Any]) -> Generation:
        inputs: dict[str, Any] = {"input_ids": torch.tensor([prompt_ids])}
        inputs["attention_mask"] = torch.ones_like(inputs["input_ids"])
        if images:
            pixels = processor.image_processor(images=images, return_tensors="pt")
            inputs.update(pixel_values=pixels["pixel_values"], image_grid_thw=pixels["image_grid_thw"])
        with generator_lock, torch.inference_mode():
            output = model.generate(
                **inputs,
                max_new_tokens=max_new_tokens,
                do_sample=True,
                temperature=temperature,
                bad_words_ids=banned or None,
                eos_token_id=tokenizer.eos_token_id,
                pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
            )
        new = output[0, len(prompt_ids) :].tolist()
        finish = "stop" if new and new[-1] == tokenizer.eos_token_id else "length"
        if finish == "length":
            new.append(tokenizer.eos_token_id)  # the turn ends here either way; the row stays well-formed
        return Generation(new, finish_reason=finish)

    async def generate(prompt_ids: list[int], images: list[Any]) -> Generation:
        return await asyncio.to_thread(_generate, prompt_ids, images)

    return generate


def _variants(oracle: list[str]) -> dict[str, list[str]]:
    return {
        "oracle": list(oracle),
        "cascade@1": [oracle[0], _BAD_CALL, _BAD_CALL, _BAD_CALL],
        "cascade@0": [_BAD_CALL, _BAD_CALL, _BAD_CALL],
        "wrong": [_WRONG],
    }


async def run_demo(
    out_dir: str | Path,
    *,
    advantage_fn: AdvantageFn,
    model_dir: str | Path | None = None,
    tasks: int = 3,
    model_rollouts: int = 2,
    settings: RLAgentSettings | None = None,
) -> DemoResult:
    """Run the demo and write its transcripts and table under ``out_dir``.

    Args:
        advantage_fn: computes the advantages of the rollout rows (the CLI uses verl's ``compute_advantage``).
        model_dir: a local Qwen3-VL checkpoint for the processor; ``None`` builds the tiny one under
        ``out_dir``.
        tasks: how many mini-benchmark tasks (each gets a group of 4 scripted rollouts plus the model's).
        model_rollouts: rollouts per task sampled from the model in ``model_dir`` (0: scripted only).
    """
    from transformers import AutoProcessor

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if model_dir is None:
        from opensearch_vl.sft.tiny_model import build_tiny_qwen3vl

        model_dir = build_tiny_qwen3vl(out / "tiny-qwen3vl")
    processor = AutoProcessor.from_pretrained(str(model_dir))
    tokenizer = processor.tokenizer
    settings = settings or RLAgentSettings.model_validate(
        {
            "tools": {"image_roots": [str(MINI_DIR)]},
            "limits": {"max_turns": 8},
            "system_prompt": "You are a visual research agent. Use one tool per turn.\nTools:\n{tools}",
        }
    )
    env = ToolEnvironment(settings.tools)
    reward = build_reward(settings)
    renderer = ChatRenderer(processor)
    cases = [json.loads(line) for line in (MINI_DIR / "mini.jsonl").read_text().splitlines() if line.strip()]
    oracles = {
        json.loads(line)["id"]: json.loads(line)["turns"]
        for line in (MINI_DIR / "oracle_turns.jsonl").read_text().splitlines()
        if line.strip()
    }
    jobs = []
    for case in [c for c in cases if c["id"] in oracles][:tasks]:
        row = {
            "id": case["id"],
            "question": case["question"],
            "answers": case["answers"],
            "images": [str(MINI_DIR / case["image"])],
        }
        for variant, turns in _variants(oracles[case["id"]]).items():
            jobs.append((task_from_row(row), variant, turns))
        for k in range(model_rollouts):
            jobs.append((task_from_row(row), f"model#{k + 1}", None))
    model_generate = local_generate_fn(model_dir) if model_rollouts else None

    async def one(task, variant, turns):
        async def scripted(prompt_ids, images):
            text = turns[policy.trajectory.num_completions]
            return Generation(tokenizer.encode(text, add_special_tokens=False) + [tokenizer.eos_token_id])

        policy = TokenPolicy(renderer, scripted if turns is not None else model_generate)
        transcript, scored = await rollout(policy, task, env, settings, reward)
        return transcript, scored, policy.trajectory.assemble(scored.outcome.kept_steps)

    results: list[tuple[Transcript, ScoredEpisode, TokenRow]] = await asyncio.gather(*(one(*j) for j in jobs))
    await env.aclose()
    advantages = advantage_fn(
        [r for _, _, r in results], [s for _, s, _ in results], [t.id for t, _, _ in jobs]
    )
    rtilde = _normalized(
        [s.reward.total for _, s, _ in results],
        [t.id for t, _, _ in jobs],
        [s.outcome.is_fatal for _, s, _ in results],
    )
    rows = []
    for (task, variant, _), (transcript, scored, token_row), adv, rt in zip(
        jobs, results, advantages, rtilde
    ):
        transcript.save(out / "transcripts" / f"{task.id}__{variant}.json")
        o, r = scored.outcome, scored.reward
        rows.append(
            DemoRow(
                task.id,
                variant,
                o.termination,
                o.num_steps,
                o.fatal_step_index,
                o.is_fatal,
                r.r_fmt,
                r.r_acc,
                r.r_query,
                r.total,
                sum(token_row.response_mask),
                len(token_row.images),
                float(adv),
                bool(o.is_fatal and rt < 0),
            )
        )
    result = DemoResult(rows, out)
    (out / "rl_demo_table.txt").write_text(result.table() + "\n")
    return result


def _normalized(rewards: list[float], groups: list[str], fatal: list[bool]) -> list[float]:
    """r̃ per row, from the estimator's own math and default settings, to report which rows were clamped."""
    import torch
    from opensearch_vl.rl.advantage import fatal_group_advantage

    scores = torch.tensor(rewards, dtype=torch.float32).unsqueeze(-1)
    return fatal_group_advantage(scores, torch.ones_like(scores), groups, fatal).rtilde.tolist()


def demo_summary(result: DemoResult) -> dict[str, Any]:
    """Counts for a report: rollouts, fatal, clamped, mean reward."""
    rows = result.rows
    return {
        "rollouts": len(rows),
        "fatal": sum(r.is_fatal for r in rows),
        "clamped": sum(r.clamped for r in rows),
        "mean_reward": sum(r.reward for r in rows) / max(1, len(rows)),
    }
