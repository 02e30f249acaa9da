"""Re-judge a finished run without re-running it: ``opensearch-vl eval judge RUN_DIR --judge-url …``.

Every case file is read, scored again with the given judge, and rewritten atomically; the run header records
the new judge identity and a history entry. Episodes are not touched.

Example:
    >>> cfg = JudgeConfig(endpoint=EndpointConfig(base_url="http://127.0.0.1:8000/v1", model="gpt-4o"))
    >>> rejudge("runs/fvqa-8b", cfg)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from opensearch_vl.eval.judge import AnswerJudge, JudgeConfig, ProcessJudge
from opensearch_vl.eval.run_log import RunLog
from opensearch_vl.tools_env.transcript import Transcript

__all__ = ["rejudge"]


async def _rejudge(log: RunLog, config: JudgeConfig, process: bool, concurrency: int) -> dict[str, int]:
    judge = AnswerJudge(config)
    process_judge = ProcessJudge(config) if process else None
    paths = log.case_files()
    counts = {"cases": len(paths), "correct": 0, "unscored": 0}
    semaphore = asyncio.Semaphore(concurrency)

    async def one(path: Path) -> None:
        async with semaphore:
            transcript = await asyncio.to_thread(Transcript.load, path)
            score = await judge.judge_transcript(transcript)
            transcript.scores["answer"] = score
            if process_judge is not None:
                transcript.scores["process"] = await process_judge.score(transcript)
            await asyncio.to_thread(transcript.save, path)
        counts["correct"] += int(score.value == 1.0)
        counts["unscored"] += int(score.value is None)

    await asyncio.gather(*(one(p) for p in paths))
    header = log.read_header()
    header.judge = {"answer": {"model": judge.model_name, "prompt_sha256": judge.prompt_sha256}}
    header.config["judge"] = config.model_dump(mode="json")
    header.history.append({"at": time.time(), "action": "judge", **counts})
    log.write_header(header)
    return counts


def rejudge(
    run_dir: str | Path, config: JudgeConfig, *, process: bool = False, concurrency: int = 16
) -> dict[str, int]:
    """Score every case of ``run_dir`` again; returns ``{"cases", "correct", "unscored"}``."""
    return asyncio.run(_rejudge(RunLog(run_dir), config, process, concurrency))
