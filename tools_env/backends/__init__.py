"""Backends behind the tools: the HTTP boundary, URL policy, retries, indexes, OCR, search APIs and sandbox.

Each external service is a small object with a ``name`` and ``call(request) -> dict`` (see
:class:`opensearch_vl.tools_env.cache.Service`) so the record/replay cache can wrap it. Local backends
(the corpus index, the gallery, local OCR, the sandbox) are deterministic and are not cached.
Modules are imported where used; importing this package loads nothing heavy.
"""
