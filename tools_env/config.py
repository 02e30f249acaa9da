"""Configuration of the tool environment (pydantic; unknown keys are rejected).

One :class:`ToolEnvConfig` holds the shared limits and one nested section per tool family. Every backend
defaults to an offline implementation that needs no key: the bundled sample corpus for search and visit,
the bundled gallery for image search, local OCR, classical super-resolution, a subprocess sandbox.
Online backends are chosen per section (``search.backend: serper``); their keys are read from the
environment variable *named* in the config when the backend is built, never stored in the config.

Example:
    >>> ToolEnvConfig().max_output_chars
    8000
    >>> ToolEnvConfig.model_validate({"search": {"backend": "serper"}}).search.serper_api_key_env
    'SERPER_API_KEY'
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from opensearch_vl.errors import ConfigError

__all__ = [
    "ToolEnvConfig",
    "HttpSettings",
    "SummarizerSettings",
    "SearchSettings",
    "VisitSettings",
    "LayoutSettings",
    "ImageSearchSettings",
    "PythonSettings",
    "SuperResolutionSettings",
    "CacheSettings",
]


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HttpSettings(_Section):
    """Timeouts and retries shared by every HTTP backend (search, visit, lens, OCR endpoint, summarizer)."""

    connect_timeout_s: float = 5.0
    """Seconds to establish a connection."""
    read_timeout_s: float = 20.0
    """Seconds to wait for each read from the server."""
    max_attempts: int = Field(3, ge=1, le=10)
    """Attempts per call, the first included; only 429, 5xx, timeouts and connection errors are retried."""
    backoff_base_s: float = 0.5
    """First retry waits about this long; each further retry doubles it (with full jitter)."""
    backoff_max_s: float = 8.0
    """Upper bound of one wait between attempts."""
    user_agent: str = "opensearch-vl/0.1 (+https://github.com/opensearch-vl)"
    """User-Agent header sent on every request."""


class SummarizerSettings(_Section):
    """An OpenAI-compatible chat server that summarizes pages (visit) and search results (optional)."""

    base_url: str | None = Field(default_factory=lambda: _env("SUMMARIZER_BASE_URL"))
    """Base URL ending in ``/v1`` (e.g. ``http://localhost:8000/v1``); ``None`` = extractive summaries."""
    model: str = "Qwen/Qwen3-32B"
    """Model name sent in the request."""
    api_key_env: str = "SUMMARIZER_API_KEY"
    """Environment variable holding the bearer token, if the server needs one."""
    max_input_chars: int = 6000
    """Page text beyond this is not sent to the summarizer."""
    max_tokens: int = 1024
    """``max_tokens`` of the summary request."""
    temperature: float = 0.3
    """Sampling temperature of the summary request."""


class SearchSettings(_Section):
    """text_search and web_search."""

    backend: Literal["local", "serper"] = "local"
    """``local``: SQLite FTS5 index (bm25); ``serper``: Google results through serper.dev."""
    corpus_index: str | None = None
    """Index built by ``opensearch-vl index build-corpus``; ``None`` = the bundled sample corpus."""
    serper_base_url: str = "https://google.serper.dev"
    """Serper API root (point it at a local server in tests)."""
    serper_api_key_env: str = "SERPER_API_KEY"
    """Environment variable holding the Serper key (read when the backend is built)."""
    gl: str = "us"
    """Serper country code."""
    default_top_k: int = Field(5, ge=1, le=50)
    """Results returned when the call gives no ``top_k``."""
    max_top_k: int = Field(20, ge=1, le=100)
    """Largest ``top_k`` honoured (larger requests are clamped)."""
    summarize: bool = False
    """text_search: summarize each result page with the summarizer (when one is configured)."""
    snippet_chars: int = 400
    """Characters of each local result's text shown as its snippet."""


class VisitSettings(_Section):
    """visit: read a web page and report what it says about a goal."""

    backend: Literal["http", "jina", "local"] = "local"
    """``local``: only pages of the search corpus; ``http``: fetch directly; ``jina``: Jina Reader."""
    serve_corpus_pages: bool = True
    """With ``http``/``jina``, answer URLs that are in the local corpus from it, without network."""
    jina_base_url: str = "https://r.jina.ai"
    """Jina Reader root; the page URL is appended."""
    jina_api_key_env: str = "JINA_API_KEY"
    """Environment variable holding an optional Jina key (higher rate limit)."""
    max_page_bytes: int = 5_000_000
    """Bodies larger than this are refused (the download stops at the cap)."""
    max_redirects: int = Field(5, ge=0, le=20)
    """Redirects followed; each hop's address is checked again."""
    allowed_content_types: list[str] = Field(
        default_factory=lambda: [
            "text/html",
            "text/plain",
            "application/xhtml+xml",
            "text/markdown",
            "application/json",
            "application/xml",
            "text/xml",
        ]
    )
    """Content types accepted from the server; others (PDF, images, binaries) are refused."""
    max_page_chars: int = 6000
    """Characters of page text shown when no summarizer is configured."""


class LayoutSettings(_Section):
    """layout_parsing (OCR)."""

    backend: Literal["rapidocr", "remote"] = "rapidocr"
    """``rapidocr``: local ONNX OCR (``pip install 'opensearch-vl[ocr]'``); ``remote``: PP-StructureV3 API."""
    api_url: str | None = Field(default_factory=lambda: _env("LAYOUT_PARSING_API_URL"))
    """PP-StructureV3 ``/layout-parsing`` URL (default: ``$LAYOUT_PARSING_API_URL``)."""
    token_env: str = "LAYOUT_PARSING_TOKEN"
    """Environment variable holding the endpoint's token (sent as ``Authorization: token …``)."""
    min_confidence: float = 0.5
    """Local OCR lines scoring below this are dropped."""
    keep_labels: list[str] = Field(
        default_factory=lambda: [
            "doc_title",
            "paragraph_title",
            "text",
            "vision_footnote",
            "figure_title",
            "table",
            "header",
            "footer",
            "number",
            "abstract",
            "content",
            "reference",
        ]
    )
    """Remote blocks with other labels (images, charts without text) are left out."""


class ImageSearchSettings(_Section):
    """image_search (reverse image search)."""

    backend: Literal["local", "serper_lens"] = "local"
    """``local``: perceptual-hash gallery; ``serper_lens``: Google Lens through serper.dev."""
    gallery_index: str | None = None
    """Index built by ``opensearch-vl index build-gallery``; ``None`` = the bundled sample gallery."""
    top_k: int = Field(5, ge=1, le=50)
    """Matches reported."""
    max_distance: int = Field(24, ge=0, le=128)
    """Local: gallery images farther than this (summed pHash+dHash Hamming bits of 128) are not matches."""
    uploader: Literal["none", "directory"] = "none"
    """How a local image gets the public URL Lens needs: ``directory`` writes it under ``upload_dir``."""
    upload_dir: str | None = None
    """``directory`` uploader: folder served publicly at ``upload_base_url``."""
    upload_base_url: str | None = None
    """``directory`` uploader: public URL of ``upload_dir`` (``https://host/uploads``)."""


class PythonSettings(_Section):
    """python_interpreter sandbox."""

    mechanism: Literal["auto", "bwrap", "unshare", "rlimits"] = "auto"
    """Isolation: ``auto`` = bubblewrap, else ``unshare -n``, else rlimits + audit hook alone (always on)."""
    python_executable: str | None = None
    """Interpreter running the code; ``None`` = the one running the environment."""
    cpu_seconds: int = Field(10, ge=1)
    """CPU-time limit (RLIMIT_CPU)."""
    wall_seconds: float = Field(20.0, gt=0)
    """Wall-time limit; the process group is killed after it."""
    memory_mb: int = Field(1024, ge=64)
    """Address-space limit (RLIMIT_AS)."""
    max_output_bytes: int = Field(20_000, ge=100)
    """stdout+stderr kept; more is dropped with a marker (and the process is killed at 50× this)."""
    max_file_bytes: int = Field(16 * 1024 * 1024, ge=1024)
    """Largest file the code may write (RLIMIT_FSIZE)."""
    max_processes: int = Field(64, ge=1)
    """RLIMIT_NPROC (not enforced for root; the audit hook blocks fork and subprocesses anyway)."""


class SuperResolutionSettings(_Section):
    """super_resolution."""

    model_path: str | None = Field(default_factory=lambda: _env("SR_MODEL_PATH"))
    """dnn_superres ``.pb`` file (EDSR/ESPCN/FSRCNN/LapSRN; needs opencv-contrib); ``None`` = classical."""
    model_name: Literal["edsr", "espcn", "fsrcnn", "lapsrn"] = "edsr"
    """Architecture of ``model_path``."""
    model_scale: int = Field(4, ge=2, le=8)
    """Scale the model file was trained for; other requested scales use the classical method."""
    max_output_pixels: int = 16 * 1024 * 1024
    """Refuse an upscale whose result would exceed this many pixels."""


class CacheSettings(_Section):
    """Record/replay cache of every external call."""

    mode: Literal["off", "read_write", "replay"] = "off"
    """``read_write`` records and reuses; ``replay`` only reuses (a miss is an error: reproducible runs)."""
    path: str | None = None
    """SQLite file; required unless ``mode`` is ``off``."""
    busy_timeout_ms: int = 30_000
    """How long a writer waits for another process's lock."""


class ToolEnvConfig(BaseModel):
    """Settings of the tool environment: shared limits plus one section per tool family."""

    model_config = ConfigDict(extra="forbid")

    tools: list[str] = Field(
        default_factory=lambda: [
            "crop",
            "sharpen",
            "super_resolution",
            "perspective_correct",
            "layout_parsing",
            "text_search",
            "web_search",
            "image_search",
            "visit",
            "python_interpreter",
        ]
    )
    """Tools offered to the model, by registered name."""
    max_output_chars: int = 8000
    """Observation text longer than this is cut, with a marker saying how much was dropped."""
    tool_timeout_s: float = 60.0
    """Wall-time limit of one tool call, backend retries included."""
    max_image_pixels: int = 64 * 1024 * 1024
    """Images with more pixels are refused before decoding (decompression bombs)."""
    image_roots: list[str] = Field(default_factory=list)
    """Folders from which task images may be loaded by path; any other path is refused."""
    allow_private_urls: bool = False
    """Let visit/image URLs reach loopback and private addresses. Only for tests against a local server."""
    http: HttpSettings = Field(default_factory=HttpSettings)
    """Timeouts and retries of every HTTP backend."""
    summarizer: SummarizerSettings = Field(default_factory=SummarizerSettings)
    """OpenAI-compatible summarizer for visit and text_search (optional)."""
    search: SearchSettings = Field(default_factory=SearchSettings)
    """text_search / web_search backend."""
    visit: VisitSettings = Field(default_factory=VisitSettings)
    """visit backend and fetch limits."""
    layout: LayoutSettings = Field(default_factory=LayoutSettings)
    """layout_parsing backend."""
    image_search: ImageSearchSettings = Field(default_factory=ImageSearchSettings)
    """image_search backend."""
    python: PythonSettings = Field(default_factory=PythonSettings)
    """python_interpreter sandbox limits."""
    super_resolution: SuperResolutionSettings = Field(default_factory=SuperResolutionSettings)
    """super_resolution model (optional)."""
    cache: CacheSettings = Field(default_factory=CacheSettings)
    """Record/replay cache of external calls."""

    @classmethod
    def from_yaml(cls, path: str | Path) -> ToolEnvConfig:
        """Load a config file; every problem is reported at once, naming the key.

        Example:
            >>> ToolEnvConfig.from_yaml("recipes/tools_offline.yaml")  # doctest: +SKIP
        """
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read tool config {path}: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping of settings, got {type(data).__name__}")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise ConfigError(f"{path}: {problems}") from exc
