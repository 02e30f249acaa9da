"""Bounded exponential backoff with full jitter, for transient upstream failures only.

A backend raises :class:`TransientBackendError` for what is worth retrying (HTTP 429, 5xx, timeouts,
connection errors) and a plain :class:`~opensearch_vl.errors.BackendError` for what is not (404, bad key).
:func:`call_with_retry` retries the first kind up to ``attempts`` times and re-raises the last error, which is
still a ``BackendError`` with its category, so the environment reports it like any other.

Example:
    >>> policy = RetryPolicy(attempts=3, base_s=0.0, max_s=0.0)
    >>> call_with_retry(lambda: 42, policy)
    42
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from opensearch_vl.errors import BackendError

__all__ = ["RetryPolicy", "TransientBackendError", "call_with_retry"]

log = logging.getLogger(__name__)
T = TypeVar("T")


class TransientBackendError(BackendError):
    """A backend failure that may succeed on a later attempt (429, 5xx, timeout, connection reset).

    ``retry_after_s`` carries the server's ``Retry-After`` hint when it sent one.
    """

    def __init__(self, category, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(category, message)
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class RetryPolicy:
    """How many attempts, and the bounds of the wait before each retry.

    The wait before retry ``i`` (0-based) is uniform in ``[0, min(max_s, base_s * 2**i)]`` ("full jitter"),
    raised to the server's ``Retry-After`` when that is larger, but never above ``max_s``.
    """

    attempts: int = 3
    base_s: float = 0.5
    max_s: float = 8.0

    def delay(
        self, retry_index: int, rng: random.Random | None = None, retry_after_s: float | None = None
    ) -> float:
        """Seconds to wait before retry number ``retry_index``."""
        ceiling = min(self.max_s, self.base_s * (2**retry_index))
        wait = (rng or random).uniform(0.0, ceiling) if ceiling > 0 else 0.0
        if retry_after_s is not None:
            wait = max(wait, min(retry_after_s, self.max_s))
        return wait


def call_with_retry(
    fn: Callable[[], T],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
    what: str = "call",
) -> T:
    """Run ``fn``, retrying :class:`TransientBackendError` with backoff; other errors pass through at once."""
    for attempt in range(policy.attempts):
        try:
            return fn()
        except TransientBackendError as exc:
            if attempt + 1 >= policy.attempts:
                if policy.attempts > 1:
                    exc.message = f"{exc.message} (after {policy.attempts} attempts)"
                    exc.args = (exc.message,)
                raise
            wait = policy.delay(attempt, rng, exc.retry_after_s)
            log.info(
                "%s failed (%s); retry %d/%d in %.2fs",
                what,
                exc.message,
                attempt + 1,
                policy.attempts - 1,
                wait,
            )
            sleep(wait)
    raise AssertionError("unreachable: the loop returns or raises")
