"""The record/replay cache: keys, modes, recorded errors, several processes at once, and exact replay."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
from concurrent.futures import ThreadPoolExecutor

import pytest
from opensearch_vl.tools_env.backends.retry import TransientBackendError
from opensearch_vl.tools_env.cache import ResultCache, canonical_key, file_summary
from opensearch_vl.tools_env.config import CacheSettings, ToolEnvConfig
from opensearch_vl.tools_env.images import ImageStore
from opensearch_vl.tools_env.tool import tool_factory
from PIL import Image

from opensearch_vl.cli.main import main as cli
from opensearch_vl.errors import BackendError, ConfigError, ReplayMissError, ToolError


class Counter:
    """A real service that counts its calls (the wrapped backend)."""

    name = "counter"

    def __init__(self, fail: Exception | None = None):
        self.calls = 0
        self.fail = fail

    def call(self, request):
        self.calls += 1
        if self.fail is not None:
            raise self.fail
        return {"echo": request, "n": len(json.dumps(request, default=str))}


def test_key_is_canonical_and_covers_tool_backend_arguments_and_image_bytes():
    base = canonical_key("text_search", "serper_search", {"q": "a", "num": 5})[0]
    assert base == canonical_key("text_search", "serper_search", {"num": 5, "q": "a"})[0]
    assert base != canonical_key("web_search", "serper_search", {"q": "a", "num": 5})[0]
    assert base != canonical_key("text_search", "other", {"q": "a", "num": 5})[0]
    assert base != canonical_key("text_search", "serper_search", {"q": "a", "num": 6})[0]
    assert canonical_key("t", "b", {"file": b"png-1"})[0] != canonical_key("t", "b", {"file": b"png-2"})[0]
    key, text = canonical_key("t", "b", {"file": b"png-1"})
    assert "png-1" not in text and "$sha256" in text


def test_read_write_records_then_hits(tmp_path):
    cache = ResultCache(tmp_path / "c.sqlite")
    service = Counter()
    wrapped = cache.wrap(service, tool="text_search")
    assert wrapped.name == "counter"
    first = wrapped.call({"q": "x"})
    assert wrapped.call({"q": "x"}) == first
    wrapped.call({"q": "y"})
    assert service.calls == 2
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.writes, stats.entries) == (1, 2, 2, 2)
    mode = sqlite3.connect(tmp_path / "c.sqlite").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_replay_hits_and_misses(tmp_path):
    path = tmp_path / "c.sqlite"
    ResultCache(path).wrap(Counter(), tool="visit").call({"url": "https://a"})
    replay = ResultCache(path, mode="replay")
    service = Counter()
    wrapped = replay.wrap(service, tool="visit")
    assert wrapped.call({"url": "https://a"})["echo"] == {"url": "https://a"}
    with pytest.raises(ReplayMissError, match="no recorded visit/counter call") as info:
        wrapped.call({"url": "https://b"})
    assert isinstance(info.value, ToolError)
    assert service.calls == 0


def test_replay_of_missing_file_and_settings(tmp_path):
    with pytest.raises(ConfigError, match="record it first"):
        ResultCache(tmp_path / "none.sqlite", mode="replay")
    assert ResultCache.from_settings(CacheSettings()) is None
    with pytest.raises(ConfigError, match="cache.path"):
        ResultCache.from_settings(CacheSettings(mode="read_write"))


def test_definite_errors_are_recorded_transient_ones_are_not(tmp_path):
    cache = ResultCache(tmp_path / "c.sqlite")
    missing = Counter(fail=BackendError("not_found", "visit: HTTP 404 from https://gone"))
    wrapped = cache.wrap(missing, tool="visit")
    for _ in range(2):
        with pytest.raises(BackendError) as info:
            wrapped.call({"url": "https://gone"})
        assert info.value.category == "not_found"
    assert missing.calls == 1 and "replayed from cache" in info.value.message
    flaky = Counter(fail=TransientBackendError("rate_limited", "HTTP 429"))
    wrapped = cache.wrap(flaky, tool="visit")
    for _ in range(2):
        with pytest.raises(TransientBackendError):
            wrapped.call({"url": "https://busy"})
    assert flaky.calls == 2


def _worker(path: str, worker: int, results) -> None:
    cache = ResultCache(path, busy_timeout_ms=60_000)

    class Square:
        name = "square"

        def call(self, request):
            return {"square": request["k"] ** 2}

    wrapped = cache.wrap(Square(), tool="t")

    def lookup(i: int) -> bool:
        key = (i * 7 + worker) % 40
        return wrapped.call({"k": key}) == {"square": key * key}

    with ThreadPoolExecutor(8) as pool:
        ok = all(pool.map(lookup, range(150)))
    stats = cache.stats()
    cache.close()
    results.put((ok, stats.hits + stats.misses))


def test_many_processes_and_threads_share_one_file(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    ResultCache(path).close()
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(path, w, results)) for w in range(4)]
    for proc in procs:
        proc.start()
    outcomes = [results.get(timeout=60) for _ in procs]
    for proc in procs:
        proc.join(timeout=30)
        assert proc.exitcode == 0
    assert all(ok for ok, _ in outcomes) and sum(n for _, n in outcomes) == 600
    summary = file_summary(path)
    assert summary["entries"] == 40
    assert summary["hits"] + summary["misses"] == 600


def test_cache_stats_cli(tmp_path, capsys):
    path = tmp_path / "c.sqlite"
    cache = ResultCache(path)
    wrapped = cache.wrap(Counter(), tool="text_search")
    wrapped.call({"q": 1})
    wrapped.call({"q": 1})
    cache.close()
    assert cli(["cache", "stats", str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["entries"] == 1 and out["hits"] == 1 and out["misses"] == 1
    assert out["by_backend"][0]["tool"] == "text_search" and out["by_backend"][0]["backend"] == "counter"


def online_config(base_url: str, fast_http, cache_path, mode="read_write"):
    return ToolEnvConfig.model_validate(
        {
            "allow_private_urls": True,
            "http": fast_http,
            "cache": {"mode": mode, "path": str(cache_path)},
            "search": {"backend": "serper", "serper_base_url": f"{base_url}/serper"},
            "visit": {"backend": "http"},
            "summarizer": {"base_url": f"{base_url}/v1"},
            "layout": {"backend": "remote", "api_url": f"{base_url}/layout-parsing"},
            "image_search": {"backend": "serper_lens"},
        }
    )


CALLS = [
    ("text_search", {"q": "replay me", "top_k": 3}),
    ("web_search", {"q": "replay me too"}),
    ("visit", {"url": "{base}/pages/article.html", "goal": "paint"}),
    ("layout_parsing", {"image": "img_1"}),
    ("image_search", {"url": "https://cdn.example.org/replay.png"}),
    ("visit", {"url": "{base}/pages/nothing", "goal": "x"}),
]


async def run_calls(config, base_for_urls):
    cache = ResultCache.from_settings(config.cache)
    tools = {name: tool_factory(name)(config, cache) for name in {c[0] for c in CALLS}}
    store = ImageStore()
    store.add(Image.new("RGB", (64, 32), "white"))
    outputs = []
    for name, args in CALLS:
        args = {k: v.format(base=base_for_urls) if isinstance(v, str) else v for k, v in args.items()}
        try:
            result = await tools[name].run(args, store)
            outputs.append(("ok", result.text))
        except ToolError as exc:
            outputs.append((exc.category, exc.message.replace(" (replayed from cache)", "")))
    cache.close()
    return outputs


async def test_replay_only_run_reproduces_recorded_calls_without_network(
    http_server, fast_http, tmp_path, monkeypatch
):
    monkeypatch.setenv("SERPER_API_KEY", "test-key")
    monkeypatch.setenv("LAYOUT_PARSING_TOKEN", "tok")
    path = tmp_path / "episode.sqlite"
    recorded = await run_calls(online_config(http_server.base_url, fast_http, path), http_server.base_url)
    assert [o[0] for o in recorded] == ["ok"] * 5 + ["not_found"]
    requests_after_recording = len(http_server.requests)

    dead = "http://127.0.0.1:9"  # nothing listens: any network call would fail
    replay_config = online_config(dead, {**fast_http, "max_attempts": 1}, path, mode="replay")
    # Same model-visible URLs as recorded; only the API endpoints point nowhere.
    replayed = await run_calls(
        replay_config.model_copy(
            update={"search": replay_config.search.model_copy(update={"serper_base_url": f"{dead}/serper"})}
        ),
        http_server.base_url,
    )
    assert replayed == recorded
    assert len(http_server.requests) == requests_after_recording

    summary = file_summary(path)
    assert {(r["tool"], r["backend"]) for r in summary["by_backend"]} == {
        ("text_search", "serper_search"),
        ("web_search", "serper_search"),
        ("visit", "http_fetch"),
        ("visit", "chat_completions"),
        ("layout_parsing", "pp_structure_v3"),
        ("image_search", "serper_lens"),
    }


async def test_replay_miss_propagates_through_the_environment(http_server, fast_http, tmp_path, monkeypatch):
    from opensearch_vl.tools_env.environment import ToolEnvironment

    monkeypatch.setenv("SERPER_API_KEY", "test-key")
    path = tmp_path / "c.sqlite"
    ResultCache(path).close()
    config = online_config(http_server.base_url, fast_http, path, mode="replay").model_copy(
        update={"tools": ["web_search"]}
    )
    env = ToolEnvironment(config)
    try:
        with pytest.raises(ReplayMissError):
            await env.execute("web_search", {"q": "never recorded"}, env.new_store())
    finally:
        await env.aclose()
