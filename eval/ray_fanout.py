"""Fan an evaluation out over a Ray cluster.

Each Ray actor builds its own :class:`~opensearch_vl.eval.run.EvalSession` from the run config (tool
environment, policy, judge), runs the episodes it is sent (several at once: actors are async) and returns the
judged transcripts, images included. The driver saves each one as it arrives, so resuming and the run folder
work exactly as in a local run, and the results are the same (the episode code is the same; only the process
it runs in differs).

Ray is imported only when this is used (``pip install 'opensearch-vl[ray]'``).

Example:
    >>> run_on_ray(config, tasks, save)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence

from opensearch_vl.tools_env.task import Task
from opensearch_vl.tools_env.transcript import Transcript

from opensearch_vl.errors import PrerequisiteError

__all__ = ["run_on_ray", "EvalActor"]

logger = logging.getLogger(__name__)


class EvalActor:
    """The actor body: one session, many concurrent episodes."""

    def __init__(self, config_json: str) -> None:
        from opensearch_vl.eval.run import EvalRunConfig, EvalSession

        self.session = EvalSession(EvalRunConfig.model_validate_json(config_json))

    async def run(self, task: Task) -> Transcript:
        """Run and judge one case."""
        return await self.session.run_case(task)


def run_on_ray(config, tasks: Sequence[Task], finished: Callable[[Transcript], None]) -> None:
    """Run ``tasks`` on Ray actors, calling ``finished`` in the driver for each transcript as it arrives."""
    try:
        import ray
    except ImportError as exc:
        raise PrerequisiteError("--ray needs Ray: pip install 'opensearch-vl[ray]'") from exc
    started_here = False
    if not ray.is_initialized():
        ray.init(address=config.ray_address, ignore_reinit_error=True, log_to_driver=False)
        started_here = True
    try:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        n_actors = max(1, min(config.ray_workers or cpus, len(tasks)))
        per_actor = max(1, math.ceil(config.concurrency / n_actors))
        actor_cls = ray.remote(num_cpus=0)(EvalActor)
        actors = [
            actor_cls.options(max_concurrency=per_actor).remote(config.model_dump_json())
            for _ in range(n_actors)
        ]
        pending = [actors[i % n_actors].run.remote(task) for i, task in enumerate(tasks)]
        logger.info("ray: %d cases on %d actors (%d episodes each at once)", len(tasks), n_actors, per_actor)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            finished(ray.get(ready[0]))
        for actor in actors:
            ray.kill(actor)
    finally:
        if started_here:
            ray.shutdown()
