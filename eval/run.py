"""Run a benchmark: episodes, judging, one transcript file per case, resumable.

:func:`run_eval` loads the benchmark, writes the run header (status ``started``), skips the cases already on
disk, runs the others with bounded concurrency (locally, or fanned out over a Ray cluster with ``ray=True``),
judges each as it ends, saves it atomically, and finally rewrites the header (``success``, ``cancelled`` or
``error``). Killing the process at any moment loses no finished case; running the same command again finishes
the rest. With the tool cache in ``replay`` mode a re-run makes no external call and reproduces the recorded
observations.

Example:
    >>> cfg = EvalRunConfig(benchmark="mini", model="scripted:eval/data/mini/oracle_turns.jsonl", out="runs/oracle")
    >>> summary = run_eval(cfg)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from opensearch_vl.eval.judge import AnswerJudge, JudgeConfig, ProcessJudge
from opensearch_vl.eval.policies import PolicyFactory, SamplingConfig, make_policy
from opensearch_vl.eval.registry import BenchmarkProfile, get_benchmark
from opensearch_vl.eval.run_log import RunHeader, RunLog, environment_info
from opensearch_vl.tools_env.config import CacheSettings, ToolEnvConfig
from opensearch_vl.tools_env.environment import ToolEnvironment
from opensearch_vl.tools_env.runner import EpisodeLimits, run_episode
from opensearch_vl.tools_env.task import Task
from opensearch_vl.tools_env.transcript import Transcript
from pydantic import BaseModel, ConfigDict, Field

from opensearch_vl.errors import ConfigError

__all__ = ["EvalRunConfig", "RunSummary", "run_eval", "run_eval_async", "EvalSession"]

logger = logging.getLogger(__name__)


class EvalRunConfig(BaseModel):
    """Everything ``opensearch-vl eval run`` takes. Unknown keys are rejected."""

    model_config = ConfigDict(extra="forbid")

    benchmark: str
    """Registered benchmark name (``opensearch-vl eval list``)."""
    data: str | None = None
    """Benchmark file or folder; ``None`` only for benchmarks with bundled data (``mini``)."""
    data_options: dict[str, Any] = Field(default_factory=dict)
    """Loader options, e.g. ``{"language": "EN"}`` for SimpleVQA or ``{"level": 2}`` for BrowseComp-VL."""
    model: str
    """``http(s)://…/v1`` endpoint, ``scripted:FILE``, or a local checkpoint folder."""
    model_name: str | None = None
    """The ``model`` field sent to an endpoint (the served model's name)."""
    out: str
    """Run folder (created; an existing run of the same benchmark and model is resumed)."""
    limit: int | None = Field(None, ge=1)
    """Run only the first N cases (after loading, in file order)."""
    concurrency: int = Field(16, ge=1)
    """Episodes in flight at once."""
    max_turns: int | None = Field(None, ge=1)
    """Overrides the benchmark profile's turn limit."""
    fatal_k: int = Field(3, ge=1)
    """K consecutive error steps end an episode (the fatal cascade)."""
    episode_timeout_s: float | None = Field(1800.0, gt=0)
    """Wall-time limit of one episode."""
    tools: list[str] | None = None
    """Overrides the benchmark profile's tool list."""
    tool_config: str | None = None
    """YAML file of :class:`~opensearch_vl.tools_env.config.ToolEnvConfig` (backends, keys, limits)."""
    cache_mode: Literal["off", "read_write", "replay"] = "read_write"
    """Tool result cache: ``replay`` makes a re-run reproducible (a miss ends that episode as replay_miss)."""
    cache_path: str | None = None
    """SQLite cache file; default ``<out>/tool_cache.sqlite``."""
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    """Policy sampling settings (temperature 0.7, top_p 0.95, 4096 tokens per turn)."""
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    """Answer judge; without an endpoint the rule matcher scores."""
    process_judge: bool = False
    """Also score the search process (needs ``judge.endpoint``)."""
    device_map: str = "auto"
    """Local checkpoints: ``auto``, ``cpu``, ``cuda:0``…"""
    seed: int = 0
    """Seeds Python's RNG and (for local models) torch; recorded in the header."""
    ray: bool = False
    """Fan the episodes out over a Ray cluster (same results as a local run)."""
    ray_address: str | None = None
    """Ray cluster address (``auto`` for an existing cluster); ``None`` starts a local one."""
    ray_workers: int | None = Field(None, ge=1)
    """Ray actors; default: the cluster's CPU count, at most the number of cases."""

    def limits(self, profile: BenchmarkProfile) -> EpisodeLimits:
        """The episode limits for this run."""
        return EpisodeLimits(
            max_turns=self.max_turns or profile.max_turns,
            fatal_k=self.fatal_k,
            episode_timeout_s=self.episode_timeout_s,
        )


@dataclass(frozen=True)
class RunSummary:
    """What a run did: counts and where it wrote."""

    out: Path
    total: int
    skipped: int
    ran: int
    correct: int
    unscored: int
    wall_time_s: float


class EvalSession:
    """The per-process machinery of a run: tool environment, policies, judges, limits.

    Built from the config alone, so a Ray actor builds an identical one on its node.
    """

    def __init__(self, config: EvalRunConfig, *, policy: PolicyFactory | None = None) -> None:
        self.config = config
        spec = get_benchmark(config.benchmark)
        self.profile = spec.profile
        base = ToolEnvConfig.from_yaml(config.tool_config) if config.tool_config else ToolEnvConfig()
        tools = list(config.tools if config.tools is not None else spec.profile.tools)
        roots = list(base.image_roots)
        data = Path(config.data).resolve() if config.data else _mini_dir()
        roots.append(str(data if data.is_dir() else data.parent))
        cache = CacheSettings(
            mode=config.cache_mode,
            path=config.cache_path or str(Path(config.out) / "tool_cache.sqlite"),
            busy_timeout_ms=base.cache.busy_timeout_ms,
        )
        self.env_config = base.model_copy(update={"tools": tools, "image_roots": roots, "cache": cache})
        from opensearch_vl.tools_env.cache import ResultCache

        self.env = ToolEnvironment(self.env_config, ResultCache.from_settings(cache))
        self.limits = config.limits(spec.profile)
        sampling = config.sampling
        if sampling.seed is None:
            sampling = sampling.model_copy(update={"seed": config.seed})
        self.policy = policy or make_policy(
            config.model, sampling=sampling, model_name=config.model_name, device_map=config.device_map
        )
        judge_config = config.judge if spec.profile.judge == "llm" else JudgeConfig()
        self.judge = AnswerJudge(judge_config)
        self.process_judge = ProcessJudge(judge_config) if config.process_judge else None

    async def run_case(self, task: Task) -> Transcript:
        """One episode, judged."""
        transcript = await run_episode(
            self.policy.for_case(task.id), task, self.env, limits=self.limits, policy_meta=self.policy.meta
        )
        await self.score(transcript)
        return transcript

    async def aclose(self) -> None:
        """Close the connections the policy, the judges and the tools hold on the running loop."""
        closers = [getattr(self.policy.shared, "aclose", None), self.judge.aclose, self.env.aclose]
        if self.process_judge is not None:
            closers.append(self.process_judge.aclose)
        for close in closers:
            if close is not None:
                await close()

    async def score(self, transcript: Transcript) -> None:
        """Put the answer (and process) scores on ``transcript``."""
        transcript.scores["answer"] = await self.judge.judge_transcript(transcript)
        if self.process_judge is not None:
            transcript.scores["process"] = await self.process_judge.score(transcript)


def _check_resumable(log: RunLog, config: EvalRunConfig) -> RunHeader | None:
    if not log.exists():
        return None
    old = log.read_header()
    for key in ("benchmark", "model", "data"):
        if old.config.get(key) != getattr(config, key):
            raise ConfigError(
                f"{log.root} holds a run with {key}={old.config.get(key)!r}, not "
                f"{getattr(config, key)!r}; use another --out folder to start a new run"
            )
    return old


async def run_eval_async(
    config: EvalRunConfig,
    *,
    progress: bool = True,
    on_case: Callable[[Transcript], Any] | None = None,
    policy: PolicyFactory | None = None,
) -> RunSummary:
    """The async body of :func:`run_eval` (for callers already inside an event loop)."""
    random.seed(config.seed)
    spec = get_benchmark(config.benchmark)
    if config.data is None and config.benchmark != "mini":
        raise ConfigError(
            f"benchmark {config.benchmark!r} needs --data PATH (its files in the published format)"
        )
    tasks = spec.load(config.data, **config.data_options) if config.data else spec.load(_mini_dir())
    if config.limit:
        tasks = tasks[: config.limit]
    log = RunLog(config.out)
    old = _check_resumable(log, config)
    done = log.finished_ids()
    todo = [t for t in tasks if t.id not in done]
    session = EvalSession(config, policy=policy) if todo or old is None else None
    header = old or RunHeader(benchmark=config.benchmark, config={})
    header.status, header.error, header.finished_at = "started", None, None
    header.config = config.model_dump(mode="json")
    header.profile = {
        "tools": list(session.env_config.tools) if session else header.profile.get("tools"),
        "max_turns": config.max_turns or spec.profile.max_turns,
        "judge": spec.profile.judge,
        "fatal_k": config.fatal_k,
        "cache_mode": config.cache_mode,
    }
    if session is not None:
        header.policy = session.policy.meta
        header.judge = {
            "answer": {"model": session.judge.model_name, "prompt_sha256": session.judge.prompt_sha256}
        }
    header.environment = environment_info()
    header.seeds = {
        "seed": config.seed,
        "sampling_seed": config.sampling.seed if config.sampling.seed is not None else config.seed,
    }
    header.counts = {"cases": len(tasks), "skipped_existing": len(tasks) - len(todo), "run_now": len(todo)}
    header.history.append({"at": time.time(), "action": "run", "cases": len(todo)})
    log.write_header(header)

    began = time.monotonic()
    bar = _progress(len(tasks), len(tasks) - len(todo), config.benchmark, progress)
    results: list[Transcript] = []

    def finished(transcript: Transcript) -> None:
        log.save(transcript)
        results.append(transcript)
        bar.update(1)
        if on_case is not None:
            on_case(transcript)

    try:
        if todo and config.ray:
            from opensearch_vl.eval.ray_fanout import run_on_ray

            await asyncio.to_thread(run_on_ray, config, todo, finished)
        elif todo:
            await _run_local(session, todo, config.concurrency, finished)
    except BaseException as exc:
        header.status = (
            "cancelled" if isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError)) else "error"
        )
        header.error = f"{exc.__class__.__name__}: {exc}"
        header.finished_at = time.time()
        header.counts["finished"] = len(log.finished_ids())
        log.write_header(header)
        raise
    finally:
        bar.close()
        if session is not None:
            await session.aclose()
    header.status = "success"
    header.finished_at = time.time()
    header.counts["finished"] = len(log.finished_ids())
    log.write_header(header)
    answer_scores = [t.scores.get("answer") for t in results]
    return RunSummary(
        out=log.root,
        total=len(tasks),
        skipped=len(tasks) - len(todo),
        ran=len(results),
        correct=sum(1 for s in answer_scores if s is not None and s.value == 1.0),
        unscored=sum(1 for s in answer_scores if s is None or s.value is None),
        wall_time_s=time.monotonic() - began,
    )


def _mini_dir() -> Path:
    from opensearch_vl.eval.benchmarks.mini import mini_data_dir

    return mini_data_dir()


async def _run_local(
    session: EvalSession, tasks: Sequence[Task], concurrency: int, finished: Callable[[Transcript], None]
) -> None:
    pending = iter(tasks)
    loop = asyncio.get_running_loop()
    # Saving fsyncs every file; a pool of its own keeps those waits off the threads the tools run in.
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="eval-save") as saver:

        async def worker() -> None:
            for task in pending:  # shared iterator: each task is taken by exactly one worker
                transcript = await session.run_case(task)
                await loop.run_in_executor(saver, finished, transcript)

        await asyncio.gather(*(worker() for _ in range(min(concurrency, len(tasks)))))


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, initial: int, name: str, enabled: bool):
    if not enabled:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, desc=name, unit="case", dynamic_ncols=True)


def run_eval(config: EvalRunConfig, *, progress: bool = True) -> RunSummary:
    """Run (or resume) an evaluation; see the module docstring.

    Example:
        >>> run_eval(EvalRunConfig(benchmark="fvqa", data="fvqa_test.parquet", model="http://127.0.0.1:30000/v1",
        ...                        out="runs/fvqa-8b"))  # doctest: +SKIP
    """
    return asyncio.run(run_eval_async(config, progress=progress))
