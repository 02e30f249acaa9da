"""The tool environment: the configured tools, their schemas, and safe execution of one call.

:meth:`ToolEnvironment.execute` is the one boundary between the agent and the tools. It validates the
arguments against the tool's schema (filling schema defaults), runs the tool under the per-tool time limit,
adds the images it produced to the episode's :class:`~opensearch_vl.tools_env.images.ImageStore` (announcing
each as ``New image: img_3 (512x384)``), truncates the text, and turns every failure into an error
observation (see :mod:`opensearch_vl.tools_env.observation` for the marker). No exception escapes, with one
deliberate exception: :class:`~opensearch_vl.errors.ReplayMissError` (replay-only cache met an unrecorded
call) is re-raised, because it means the *run* is misconfigured, not that the model erred; the episode
runner ends the episode with termination ``replay_miss``.

Example:
    >>> import asyncio
    >>> from opensearch_vl.tools_env.tool import FunctionTool, ToolResult, ToolSpec
    >>> schema = {"type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"]}
    >>> echo = FunctionTool(ToolSpec("echo", "Echo.", schema), lambda args, store: ToolResult(text=args["s"]))
    >>> env = ToolEnvironment(tools=[echo])
    >>> asyncio.run(env.execute("echo", {"s": "hi"}, env.new_store())).text
    'hi'
    >>> asyncio.run(env.execute("echo", {}, env.new_store())).text
    "[tool error: bad_arguments] echo: missing required property 's'"
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from opensearch_vl.tools_env.config import ToolEnvConfig
from opensearch_vl.tools_env.images import ImageStore
from opensearch_vl.tools_env.observation import format_error, truncate_text
from opensearch_vl.tools_env.prompts import load_prompt
from opensearch_vl.tools_env.tool import TOOL_THREADS, Tool, ToolSpec, ToolThreads, run_sync, tool_factory
from opensearch_vl.tools_env.validation import apply_defaults, check_schema, validate_arguments
from PIL import Image

from opensearch_vl.errors import ConfigError, ReplayMissError, ToolError

__all__ = ["ToolEnvironment", "ToolOutcome", "DEFAULT_TOOL_THREADS"]

logger = logging.getLogger(__name__)


DEFAULT_TOOL_THREADS = 128
"""How many blocking tool calls (synchronous HTTP backends) may run at once in one environment."""
_MAX_IMAGE_BYTES = 50_000_000  # an image URL's body is capped before decoding (the pixel check follows)


def _cache_from_config(config: ToolEnvConfig) -> Any:
    settings = getattr(config, "cache", None)
    if settings is None or settings.mode == "off":
        return None
    from opensearch_vl.tools_env.cache import ResultCache

    return ResultCache.from_settings(settings)


@dataclass(frozen=True)
class ToolOutcome:
    """The result of one call as the model will see it, plus what the transcript records."""

    text: str
    """Observation text (inside ``<tool_response>``): truncated, images announced; or the error."""
    image_ids: tuple[str, ...] = ()
    """Ids of the images the call added to the store, in order."""
    error: bool = False
    category: str | None = None
    """Error category (one of ``ERROR_CATEGORIES``) when ``error``."""
    arguments: dict[str, Any] | None = None
    """The arguments the tool received (validated, defaults filled); ``None`` if validation failed."""
    info: dict[str, Any] = field(default_factory=dict)
    """The tool's ``ToolResult.info`` plus ``truncated_chars`` when the text was cut."""
    latency_s: float = 0.0


class ToolEnvironment:
    """The configured tools and the safe way to call them. One environment serves many concurrent episodes.

    Args:
        config: environment settings; ``None`` uses the defaults.
        cache: the record/replay cache passed to every tool factory; ``None`` builds the one ``config.cache``
            asks for (none when its mode is ``off``).
        tools: ready tool objects to use *instead of* building ``config.tools`` from the registry.
        fetch_url: ``url -> bytes`` used by the image store for http(s) image references; ``None`` uses the
            backends' public-URL fetcher, which applies the URL safety policy (``config.allow_private_urls``).
        tool_threads: size of the worker pool for blocking tool code (synchronous HTTP backends); bounds how
            many such calls run at once across all episodes.
        cpu_threads: size of the pool for CPU-bound tool code (``FunctionTool(cpu_bound=True)``, image
            encoding); ``None`` = one per CPU core.

    Example:
        >>> env = ToolEnvironment(ToolEnvConfig(tools=["crop", "sharpen"]))  # doctest: +SKIP
        >>> [s["function"]["name"] for s in env.openai_tools()]  # doctest: +SKIP
        ['crop', 'sharpen']
    """

    def __init__(
        self,
        config: ToolEnvConfig | None = None,
        cache: Any = None,
        *,
        tools: Sequence[Tool] | None = None,
        fetch_url: Callable[[str], bytes] | None = None,
        tool_threads: int = DEFAULT_TOOL_THREADS,
        cpu_threads: int | None = None,
    ) -> None:
        if tool_threads < 1 or (cpu_threads is not None and cpu_threads < 1):
            raise ConfigError(
                f"tool_threads={tool_threads}, cpu_threads={cpu_threads}: pool sizes must be >= 1"
            )
        self._pool_sizes = (tool_threads, cpu_threads or os.cpu_count() or 1)
        self._threads: ToolThreads | None = None
        self.config = config or ToolEnvConfig()
        self._owns_cache = cache is None
        self.cache = _cache_from_config(self.config) if cache is None else cache
        self._fetch_url = fetch_url
        self._http: Any = None
        self._default_prompt: str | None = None
        if tools is None:
            tools = [self._build(name) for name in self.config.tools]
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            name = tool.spec.name
            if name in self._tools:
                raise ConfigError(f"tool {name!r} is configured twice; list each tool once")
            check_schema(tool.spec.parameters, f"{name}.parameters")
            self._tools[name] = tool
        self._specs = {name: tool.spec for name, tool in self._tools.items()}

    def _build(self, name: str) -> Tool:
        tool = tool_factory(name)(self.config, self.cache)
        if tool.spec.name != name:
            raise ConfigError(f"the factory registered as {name!r} built a tool named {tool.spec.name!r}")
        return tool

    # ---- schemas -------------------------------------------------------------------------------------
    @property
    def specs(self) -> Mapping[str, ToolSpec]:
        """Tool specs by name, in configured order (what :func:`.parser.parse_turn` validates against)."""
        return MappingProxyType(self._specs)

    @property
    def tool_names(self) -> list[str]:
        """Names of the offered tools, in configured order."""
        return list(self._tools)

    def openai_tools(self) -> list[dict[str, Any]]:
        """The ``tools`` list of an OpenAI chat request: one ``{"type": "function", …}`` per tool."""
        return [tool.spec.openai_schema() for tool in self._tools.values()]

    def system_prompt(self, template: str | None = None) -> str:
        """The system prompt with the tool signatures filled in (one JSON object per line at ``{tools}``).

        Args:
            template: prompt text containing ``{tools}``; ``None`` uses the packaged ``prompts/system.txt``.
        """
        if template is None:
            if self._default_prompt is None:
                self._default_prompt = self.system_prompt(load_prompt("system"))
            return self._default_prompt
        signatures = "\n".join(json.dumps(schema, ensure_ascii=False) for schema in self.openai_tools())
        return template.replace("{tools}", signatures)

    def new_store(self) -> ImageStore:
        """A fresh per-episode image store using the configured roots, pixel limit and URL fetcher."""
        return ImageStore(
            roots=self.config.image_roots,
            max_pixels=self.config.max_image_pixels,
            fetch_url=self._fetch_url or self._fetch_public_image,
        )

    def _fetch_public_image(self, url: str) -> bytes:
        if self._http is None:
            from opensearch_vl.tools_env.backends.http import HttpClient

            self._http = HttpClient(self.config.http, allow_private=self.config.allow_private_urls)
        return self._http.fetch_public(url, max_bytes=_MAX_IMAGE_BYTES, service="image").body

    # ---- execution -----------------------------------------------------------------------------------
    async def execute(self, name: str, arguments: Any, store: ImageStore) -> ToolOutcome:
        """Run one tool call; every failure becomes an error outcome (only ``ReplayMissError`` propagates).

        Example:
            >>> asyncio.run(ToolEnvironment(tools=[]).execute("nope", {}, ImageStore())).category
            'invalid_call'
        """
        start = time.perf_counter()
        tool = self._tools.get(name)
        if tool is None:
            available = ", ".join(self._tools) or "none"
            return self._failure("invalid_call", f"unknown tool {name!r}; available: {available}", start)
        if not isinstance(arguments, Mapping):
            return self._failure(
                "invalid_call",
                f"{name}: arguments must be a JSON object, got {type(arguments).__name__}",
                start,
            )
        checked = validate_arguments(tool.spec.parameters, dict(arguments))
        if not checked.ok:
            return self._failure("bad_arguments", f"{name}: " + "; ".join(checked.errors), start)
        call_arguments = apply_defaults(tool.spec.parameters, checked.value)
        before = len(store)
        token = TOOL_THREADS.set(self.threads)
        try:
            result = await asyncio.wait_for(
                tool.run(call_arguments, store), timeout=self.config.tool_timeout_s
            )
            if not hasattr(result, "text"):
                raise TypeError(f"{name} returned {type(result).__name__}, expected ToolResult")
            if result.images:
                await self._store_images(name, result.images, store)
        except ReplayMissError:
            raise
        except ToolError as exc:
            return self._failure(exc.category, exc.message, start, call_arguments)
        except (asyncio.TimeoutError, TimeoutError):
            return self._failure(
                "timeout", f"{name}: no result within {self.config.tool_timeout_s:g} s", start, call_arguments
            )
        except Exception as exc:  # the boundary: a tool bug must become an observation, not a crash
            logger.warning("tool %s raised %s", name, exc.__class__.__name__, exc_info=True)
            return self._failure(
                "internal",
                f"{name} failed unexpectedly: {exc.__class__.__name__}: {exc}",
                start,
                call_arguments,
            )
        finally:
            TOOL_THREADS.reset(token)
        # images a tool added to the store itself count as produced by this call too
        produced = store.ids[before:]
        text, dropped = truncate_text(result.text, self.config.max_output_chars)
        announcements = []
        for image_id in produced:
            width, height = store.get(image_id).size
            announcements.append(f"New image: {image_id} ({width}x{height})")
        if announcements:
            text = "\n".join([text, *announcements]) if text else "\n".join(announcements)
        info = dict(result.info)
        if dropped:
            info["truncated_chars"] = dropped
        return ToolOutcome(
            text=text,
            image_ids=tuple(produced),
            arguments=call_arguments,
            info=info,
            latency_s=time.perf_counter() - start,
        )

    async def _store_images(self, name: str, images: list[Image.Image], store: ImageStore) -> list[str]:
        # PNG encoding of large images takes tens of ms: keep it off the event loop
        return await self.offload(lambda: [store.add(image, origin=name) for image in images], cpu_bound=True)

    @property
    def threads(self) -> ToolThreads:
        """The environment's worker pools (created on first use, closed by :meth:`aclose`)."""
        if self._threads is None:
            io, cpu = self._pool_sizes
            self._threads = ToolThreads(
                ThreadPoolExecutor(io, thread_name_prefix="tool-io"),
                ThreadPoolExecutor(cpu, thread_name_prefix="tool-cpu"),
            )
        return self._threads

    async def offload(self, fn: Callable[..., Any], *args: Any, cpu_bound: bool = False) -> Any:
        """Run blocking ``fn(*args)`` in the environment's I/O pool (or CPU pool) without blocking the loop.

        Example:
            >>> asyncio.run(ToolEnvironment(tools=[]).offload(sum, [1, 2]))
            3
        """
        token = TOOL_THREADS.set(self.threads)
        try:
            return await run_sync(fn, *args, cpu_bound=cpu_bound)
        finally:
            TOOL_THREADS.reset(token)

    def _failure(
        self, category: str, message: str, start: float, arguments: dict[str, Any] | None = None
    ) -> ToolOutcome:
        text, _ = truncate_text(format_error(category, message), self.config.max_output_chars)
        return ToolOutcome(
            text=text,
            error=True,
            category=category,
            arguments=arguments,
            latency_s=time.perf_counter() - start,
        )

    # ---- lifecycle -----------------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Close the tools that hold resources (via ``aclose``/``close``) and the worker pools."""
        for tool in self._tools.values():
            closer = getattr(tool, "aclose", None)
            if closer is not None:
                await closer()
            elif callable(getattr(tool, "close", None)):
                tool.close()  # type: ignore[attr-defined]
        if self._http is not None:
            self._http.close()
            self._http = None
        if self._owns_cache and self.cache is not None:
            self.cache.close()
        if self._threads is not None:
            for pool in (self._threads.io, self._threads.cpu):
                pool.shutdown(wait=False, cancel_futures=True)  # type: ignore[union-attr]
            self._threads = None

    async def __aenter__(self) -> ToolEnvironment:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
