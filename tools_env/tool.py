"""What a tool is, and the registry of tool factories.

A tool is an object with a :class:`ToolSpec` (its OpenAI function schema: the one source of truth shown to
the model and used to validate arguments before execution) and an async ``run(arguments, store)`` that
returns a :class:`ToolResult`. Failures are raised as :class:`~opensearch_vl.errors.ToolError`; the
environment turns them (and anything else a tool raises) into error observations.

Tools are built from configuration by factories registered with :func:`register_tool`, so a backend choice
is a config value and third parties can add tools.

Example:
    >>> @register_tool("echo")
    ... def make_echo(config, cache):
    ...     return FunctionTool(ToolSpec("echo", "Echo text.", {"type": "object", "properties": {}}),
    ...                         lambda args, store: ToolResult(text="ok"))
    >>> "echo" in available_tools()
    True
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from PIL import Image

from opensearch_vl.errors import ConfigError

if TYPE_CHECKING:
    from opensearch_vl.tools_env.images import ImageStore

__all__ = ["ToolSpec", "ToolResult", "Tool", "FunctionTool", "ToolFactory", "register_tool", "tool_factory",
           "available_tools", "run_sync", "ToolThreads", "TOOL_THREADS"]


@dataclass(frozen=True)
class ToolSpec:
    """A tool's name, description and JSON-schema parameters, in OpenAI function format."""

    name: str
    description: str
    parameters: dict[str, Any]
    produces_images: bool = False

    def openai_schema(self) -> dict[str, Any]:
        """The ``{"type": "function", "function": {...}}`` object put in the ``tools`` list of a chat request."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


@dataclass
class ToolResult:
    """What a tool returns: observation text, images it produced (the store assigns their ids), details."""

    text: str
    images: list[Image.Image] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    """Backend details worth recording (backend name, cache hit, URL fetched, …); JSON-serializable."""


class Tool(Protocol):
    """A runnable tool. ``run`` receives arguments already validated against ``spec.parameters``."""

    spec: ToolSpec

    async def run(self, arguments: dict[str, Any], store: ImageStore) -> ToolResult: ...


@dataclass(frozen=True)
class ToolThreads:
    """The worker pools synchronous tool code runs in: ``io`` for blocking calls, ``cpu`` for CPU-bound work."""

    io: Executor | None
    cpu: Executor | None


TOOL_THREADS: ContextVar[ToolThreads | None] = ContextVar("opensearch_vl_tool_threads", default=None)
"""Set by the environment around each call; ``None`` (outside an environment) uses asyncio's default pool."""


async def run_sync(fn: Callable[..., Any], *args: Any, cpu_bound: bool = False) -> Any:
    """Run a blocking function in the environment's worker pool (``cpu_bound`` picks the small CPU pool).

    Tools that are not :class:`FunctionTool` should use this rather than ``asyncio.to_thread``, whose
    default pool has only ``min(32, cpus + 4)`` threads and would serialize hundreds of concurrent episodes.

    Example:
        >>> asyncio.run(run_sync(sum, [1, 2]))
        3
    """
    threads = TOOL_THREADS.get()
    executor = None if threads is None else (threads.cpu if cpu_bound else threads.io)
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(executor, functools.partial(context.run, fn, *args))


class FunctionTool:
    """Wrap a function (sync or async) ``(arguments, store) -> ToolResult`` as a :class:`Tool`.

    Sync functions run in a worker thread so blocking or CPU-bound work (OpenCV, OCR, HTTP) never blocks the
    event loop. ``cpu_bound=True`` sends them to the environment's CPU pool (one thread per core), so a burst
    of image operations from many episodes does not run hundreds at once; otherwise they use the wide I/O
    pool (``ToolEnvironment(tool_threads=…)``).
    """

    def __init__(self, spec: ToolSpec, fn: Callable[[dict[str, Any], ImageStore], ToolResult | Awaitable[ToolResult]],
                 *, cpu_bound: bool = False):
        self.spec = spec
        self._fn = fn
        self._is_async = inspect.iscoroutinefunction(fn)
        self.cpu_bound = cpu_bound

    async def run(self, arguments: dict[str, Any], store: ImageStore) -> ToolResult:
        if self._is_async:
            return await self._fn(arguments, store)  # type: ignore[misc]
        return await run_sync(self._fn, arguments, store, cpu_bound=self.cpu_bound)


ToolFactory = Callable[..., Tool]
"""``factory(config, cache) -> Tool``: builds a tool from the environment config and the result cache."""

_FACTORIES: dict[str, ToolFactory] = {}


def register_tool(name: str) -> Callable[[ToolFactory], ToolFactory]:
    """Decorator registering a tool factory under ``name`` (later registrations replace earlier ones)."""

    def decorate(factory: ToolFactory) -> ToolFactory:
        _FACTORIES[name] = factory
        return factory

    return decorate


def tool_factory(name: str) -> ToolFactory:
    """The factory registered for ``name``; an unknown name lists the available ones."""
    _load_builtin_tools()
    if name not in _FACTORIES:
        raise ConfigError(f"unknown tool {name!r}; available: {', '.join(sorted(_FACTORIES))}")
    return _FACTORIES[name]


def available_tools() -> list[str]:
    """Names of every registered tool, built-ins included."""
    _load_builtin_tools()
    return sorted(_FACTORIES)


def _load_builtin_tools() -> None:
    # Importing the package registers the built-in tools; done lazily so `import tools_env` stays cheap.
    import importlib

    try:
        importlib.import_module("opensearch_vl.tools_env.tools")
    except ModuleNotFoundError as exc:
        if exc.name != "opensearch_vl.tools_env.tools":
            raise
