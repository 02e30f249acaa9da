"""Tools at scale: rollout workers on many nodes share one tool environment through a Ray actor pool.

``mode: in_process`` (default) gives each rollout process its own :class:`ToolEnvironment` (built once per
process and settings, see :func:`environment_for`). ``mode: ray`` gives every rollout process a
:class:`RemoteToolEnvironment`: schemas, the system prompt and the per-episode image store stay local, while
``execute`` runs on a pool of named Ray actors (:class:`ToolActor`, found by name from any node). The pool
bounds the calls in flight (``max_concurrent_calls`` split over ``num_actors`` async actors) and all actors
use the environment's record/replay cache (one SQLite file on shared storage, safe across processes).

Images cross the process boundary as raw RGB arrays (Ray moves large numpy arrays through its shared-memory
object store without pickling, and no PNG codec runs on either side): a call ships the images its arguments
refer to (other ids are filled with 1×1 placeholders so numbering is identical), and images the tool
produced come back and are added to the local store under the same ids.

Ray is imported only when ``mode: ray`` is used.

Example:
    >>> env = environment_for(RLAgentSettings())  # doctest: +SKIP
    >>> ray_settings = RLAgentSettings.model_validate({"tool_service": {"mode": "ray"}})
    >>> remote = environment_for(ray_settings)  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
from typing import TYPE_CHECKING, Any

import numpy as np
from opensearch_vl.tools_env.environment import ToolEnvironment, ToolOutcome
from opensearch_vl.tools_env.images import ImageStore
from PIL import Image

if TYPE_CHECKING:
    from opensearch_vl.rl.agent import RLAgentSettings, ToolServiceSettings
    from opensearch_vl.tools_env.config import ToolEnvConfig

__all__ = ["ToolActor", "RemoteToolEnvironment", "environment_for", "start_tool_pool"]

logger = logging.getLogger(__name__)

_ENVIRONMENTS: dict[str, Any] = {}
"""Registry of shared environments of this process, keyed by a hash of their settings (one per config)."""

_PLACEHOLDER = Image.new("RGB", (1, 1))


def _key(settings: RLAgentSettings) -> str:
    payload = json.dumps(
        {
            "tools": settings.tools.model_dump(mode="json"),
            "service": settings.tool_service.model_dump(mode="json"),
        },
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def environment_for(settings: RLAgentSettings) -> Any:
    """The process-wide environment for ``settings``: a local :class:`ToolEnvironment` or a Ray proxy.

    Example:
        >>> environment_for(settings) is environment_for(settings)  # doctest: +SKIP
        True
    """
    key = _key(settings)
    if key not in _ENVIRONMENTS:
        if settings.tool_service.mode == "ray":
            _ENVIRONMENTS[key] = RemoteToolEnvironment(
                settings.tools, start_tool_pool(settings.tools, settings.tool_service)
            )
        else:
            _ENVIRONMENTS[key] = _build_local(settings.tools)
    return _ENVIRONMENTS[key]


def _build_local(config: ToolEnvConfig) -> ToolEnvironment:
    from opensearch_vl.tools_env.cache import ResultCache

    return ToolEnvironment(config, ResultCache.from_settings(config.cache))


def _referenced_ids(arguments: Any, store: ImageStore) -> set[str]:
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, str):
            ref = store.normalize_ref(value)
            if ref in store:
                found.add(ref)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)

    walk(arguments)
    return found


class ToolActor:
    """One tool worker of the pool (run as an async Ray actor): a full environment executing calls.

    Example:
        >>> actor = ToolActor(ToolEnvConfig(tools=["crop"]))  # doctest: +SKIP
    """

    def __init__(self, config: ToolEnvConfig | dict[str, Any], tools: Any = None) -> None:
        from opensearch_vl.tools_env.config import ToolEnvConfig

        config = config if isinstance(config, ToolEnvConfig) else ToolEnvConfig.model_validate(config)
        self.env = ToolEnvironment(config, tools=tools) if tools is not None else _build_local(config)
        self.calls = 0

    async def execute(self, name: str, arguments: Any, images: list[np.ndarray | None]) -> dict[str, Any]:
        """Run one call against a store rebuilt from ``images`` (RGB arrays by id order, None = not needed)."""
        store = self.env.new_store()
        for pixels in images:
            store.add(Image.fromarray(pixels) if pixels is not None else _PLACEHOLDER, origin="task")
        before = len(store)
        outcome = await self.env.execute(name, arguments, store)
        self.calls += 1
        produced = [np.asarray(store.get(i)) for i in store.ids[before:]]
        return {"outcome": outcome, "produced": produced}

    def stats(self) -> dict[str, int]:
        """Calls served by this actor."""
        return {"calls": self.calls}


def start_tool_pool(config: ToolEnvConfig, service: ToolServiceSettings, *, tools: Any = None) -> list[Any]:
    """Get (or create) the named actor pool; every process asking with the same name shares it.

    ``tools`` (ready tool objects, pickled to the actors) replaces building ``config.tools`` from the
    registry.

    Example:
        >>> handles = start_tool_pool(ToolEnvConfig(), ToolServiceSettings(mode="ray"))  # doctest: +SKIP
    """
    import ray

    if not ray.is_initialized():
        ray.init(ignore_reinit_error=True)
    per_actor = max(1, service.max_concurrent_calls // service.num_actors)
    actor_cls = ray.remote(ToolActor)
    handles = []
    for i in range(service.num_actors):
        handles.append(
            actor_cls.options(
                name=f"{service.name}_{i}", get_if_exists=True, max_concurrency=per_actor, num_cpus=0
            ).remote(config.model_dump(mode="json"), tools)
        )
    return handles


class RemoteToolEnvironment:
    """A :class:`ToolEnvironment` whose ``execute`` runs on the Ray pool (everything else is local).

    Example:
        >>> env = RemoteToolEnvironment(ToolEnvConfig(), handles)  # doctest: +SKIP
        >>> outcome = await env.execute("crop", {...}, store)  # doctest: +SKIP
    """

    def __init__(self, config: ToolEnvConfig, handles: list[Any], *, tools: Any = None) -> None:
        self._local = ToolEnvironment(config, tools=tools) if tools is not None else ToolEnvironment(config)
        self._handles = list(handles)
        self._next = itertools.cycle(range(len(self._handles)))

    def __getattr__(
        self, name: str
    ) -> Any:  # specs, tool_names, openai_tools, system_prompt, new_store, config
        return getattr(self._local, name)

    async def execute(self, name: str, arguments: Any, store: ImageStore) -> ToolOutcome:
        """Run the call on the next actor of the pool and bring produced images back into ``store``."""
        wanted = _referenced_ids(arguments, store)
        images = [np.asarray(store.get(i)) if i in wanted else None for i in store.ids]
        reply = await self._handles[next(self._next)].execute.remote(name, arguments, images)
        outcome: ToolOutcome = reply["outcome"]
        produced = reply["produced"]
        if produced:
            new_ids = [store.add(Image.fromarray(p), origin=name) for p in produced]
            if tuple(new_ids) != tuple(outcome.image_ids):
                logger.warning(
                    "tool pool returned ids %s, local store assigned %s", outcome.image_ids, new_ids
                )
        return outcome

    async def aclose(self) -> None:
        """Close the local tools (the pool lives as long as the process that created it)."""
        await self._local.aclose()
