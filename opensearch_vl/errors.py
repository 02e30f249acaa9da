"""The project's exceptions, one tree, so callers catch at the level they care about.

    OpenSearchVLError
    ├── ConfigError            a setting is wrong or missing (names the key and the accepted values)
    ├── PrerequisiteError      an optional package, file or environment variable is missing (names the fix)
    ├── DataError              an input file or sample is malformed (names the file, the index and the reason)
    ├── TranscriptFormatError  a transcript file cannot be read (version, schema)
    ├── JudgeError             the judge could not produce a verdict (after retries)
    └── ToolError              a tool call failed; recoverable: the model sees the message as an observation
        ├── BackendError       the tool's backend failed (HTTP error, rate limit, timeout, OCR engine)
        └── ReplayMissError    replay-only cache mode met a call that was never recorded

Every message says what was wrong and what to do. Third-party exceptions are mapped at one boundary
and chained with ``raise … from exc``.
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "OpenSearchVLError",
    "ConfigError",
    "PrerequisiteError",
    "DataError",
    "TranscriptFormatError",
    "JudgeError",
    "ToolError",
    "BackendError",
    "ReplayMissError",
    "ErrorCategory",
    "ERROR_CATEGORIES",
]

ErrorCategory = Literal[
    "invalid_call",  # the model's turn could not be parsed into one action, or named an unknown tool
    "bad_arguments",  # arguments violate the tool's schema or make no sense (empty crop box)
    "not_found",  # an image reference, URL or page that does not exist
    "timeout",  # the tool or its backend ran past its time limit
    "upstream_http",  # the backend answered with an HTTP error, refused a URL, or sent unusable content
    "rate_limited",  # the backend answered 429 after the retries
    "sandbox",  # python_interpreter: the code failed, or hit a resource limit
    "internal",  # a bug or an unexpected exception inside the environment
]
ERROR_CATEGORIES: tuple[str, ...] = ErrorCategory.__args__  # type: ignore[attr-defined]


class OpenSearchVLError(Exception):
    """Base of every error this package raises on purpose."""


class ConfigError(OpenSearchVLError):
    """A setting is wrong or missing. Example: ``raise ConfigError("cache.mode='rw'; use off, read_write or replay")``."""


class PrerequisiteError(OpenSearchVLError):
    """An optional dependency is missing. Example: ``raise PrerequisiteError("pip install 'opensearch-vl[ocr]'")``."""


class DataError(OpenSearchVLError):
    """An input file or sample is malformed. Example: ``raise DataError("data.jsonl:12: 'images' is not a list")``."""


class TranscriptFormatError(OpenSearchVLError):
    """A transcript file cannot be read. Example: ``raise TranscriptFormatError("run/a.json: version 9 > 1")``."""


class JudgeError(OpenSearchVLError):
    """The judge gave no usable verdict after its retries."""


class ToolError(OpenSearchVLError):
    """A recoverable tool failure: the model sees ``message`` as the observation, the step is an error step.

    Example:
        >>> raise ToolError("bad_arguments", "crop: width and height must be > 0, got width=0")
    """

    def __init__(self, category: ErrorCategory, message: str) -> None:
        if category not in ERROR_CATEGORIES:
            raise ValueError(f"unknown error category {category!r}; use one of {ERROR_CATEGORIES}")
        super().__init__(message)
        self.category: ErrorCategory = category
        self.message = message


class BackendError(ToolError):
    """The tool's backend failed. Example: ``raise BackendError("upstream_http", "serper: HTTP 502")``."""


class ReplayMissError(ToolError):
    """Replay-only cache mode met a call that was never recorded (the run is not reproducible as configured)."""

    def __init__(self, message: str) -> None:
        super().__init__("internal", message)
