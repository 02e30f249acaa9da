"""text_search / web_search: the local FTS5 index (bundled and CLI-built) and Serper on the fixture server."""

from __future__ import annotations

import json

import pytest
from opensearch_vl.tools_env.backends.search_index import CorpusIndex, build_corpus_index
from opensearch_vl.tools_env.config import ToolEnvConfig
from opensearch_vl.tools_env.images import ImageStore
from opensearch_vl.tools_env.tool import tool_factory

from opensearch_vl.cli.main import main as cli
from opensearch_vl.errors import ConfigError, DataError, PrerequisiteError, ToolError


def make(name, config=None, cache=None):
    return tool_factory(name)(ToolEnvConfig.model_validate(config or {}), cache)


async def test_bundled_corpus_answers_text_search():
    result = await make("text_search").run(
        {"q": "how tall is Kestrel Point lighthouse", "top_k": 3}, ImageStore()
    )
    assert result.text.startswith(
        "[Passage 1]\nTitle: Kestrel Point Lighthouse\n"
        "URL: https://en.example.org/wiki/Kestrel_Point_Lighthouse\nSummary:\n"
    )
    assert "31 metres" in result.text
    assert result.text.count("[Passage") == 3
    assert result.info == {"backend": "local", "results": 3, "summarized": False}


async def test_query_alias_and_web_search_format():
    result = await make("text_search").run({"query": "Old Marta bell"}, ImageStore())
    assert "Orrin Clock Tower" in result.text
    web = await make("web_search").run({"q": "Tallow Peak"}, ImageStore())
    first = web.text.splitlines()
    assert first[0].startswith("Search for 'Tallow Peak' returned")
    assert first[1].startswith("1. [") and "](https://" in first[1]


@pytest.mark.parametrize("query", ['"unbalanced', "NEAR(a b", "AND OR NOT", "col:value*", "-(x)", "🙂 ✓"])
async def test_fts_syntax_in_queries_never_breaks(query):
    result = await make("text_search").run({"q": query}, ImageStore())
    assert result.text.startswith(("[Passage 1]", "No results for"))


async def test_no_results_is_an_observation_not_an_error():
    result = await make("text_search").run({"q": "zzzqqq xyzzy"}, ImageStore())
    assert result.text == "No results for 'zzzqqq xyzzy'." and result.info["results"] == 0


async def test_missing_query_is_bad_arguments():
    with pytest.raises(ToolError) as info:
        await make("text_search").run({"top_k": 3}, ImageStore())
    assert info.value.category == "bad_arguments"


def test_cli_builds_corpus_index_used_by_config(tmp_path, capsys):
    corpus = tmp_path / "corpus.jsonl"
    rows = [
        {"url": f"https://docs.example.net/{i}", "title": f"Doc {i}", "text": f"alpha beta term{i}"}
        for i in range(30)
    ]
    rows.append({"url": "https://docs.example.net/special", "title": "Zebra crossing", "text": "stripes"})
    corpus.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "index.sqlite"
    assert cli(["index", "build-corpus", str(corpus), "--out", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == 31
    index = CorpusIndex(out)
    assert len(index) == 31
    assert index.search("zebra")[0].url == "https://docs.example.net/special"
    assert index.page("http://www.docs.example.net/special/").title == "Zebra crossing"


async def test_configured_index_is_used(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        json.dumps({"url": "https://x.example/a", "title": "Quokka", "text": "A small marsupial."})
    )
    build_corpus_index(corpus, tmp_path / "c.sqlite")
    tool = make("text_search", {"search": {"corpus_index": str(tmp_path / "c.sqlite")}})
    assert "Quokka" in (await tool.run({"q": "marsupial"}, ImageStore())).text


def test_bad_corpus_lines_name_file_and_line(tmp_path):
    corpus = tmp_path / "bad.jsonl"
    corpus.write_text('{"url": "https://a", "title": "t", "text": "ok"}\n{"title": "no url", "text": "x"}\n')
    with pytest.raises(DataError, match=r"bad.jsonl:2: missing"):
        build_corpus_index(corpus, tmp_path / "x.sqlite")
    assert not (tmp_path / "x.sqlite").exists()


def test_missing_index_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="build-corpus"):
        make("text_search", {"search": {"corpus_index": str(tmp_path / "none.sqlite")}})


def serper_config(http_server, fast_http, **search):
    return {
        "http": fast_http,
        "search": {"backend": "serper", "serper_base_url": f"{http_server.base_url}/serper", **search},
    }


async def test_serper_search(http_server, fast_http, monkeypatch):
    monkeypatch.setenv("SERPER_API_KEY", "test-key")
    tool = make("text_search", serper_config(http_server, fast_http))
    result = await tool.run({"q": "eiffel tower", "top_k": 3, "hl": "fr"}, ImageStore())
    body = json.loads(http_server.last("/serper/search").body)
    assert body == {"q": "eiffel tower", "hl": "fr", "gl": "us", "num": 3}
    assert "[Passage 1]\nTitle: Answer\nURL: https://example.org/answer\nSummary:\n42 metres" in result.text
    assert result.text.count("[Passage") == 3 and result.info["backend"] == "serper"
    web = await make("web_search", serper_config(http_server, fast_http)).run({"q": "louvre"}, ImageStore())
    assert "1. [Answer](https://example.org/answer)" in web.text


async def test_serper_top_k_is_clamped(http_server, fast_http, monkeypatch):
    monkeypatch.setenv("SERPER_API_KEY", "test-key")
    tool = make("text_search", serper_config(http_server, fast_http, max_top_k=4))
    await tool.run({"q": "clamp me", "top_k": 50}, ImageStore())
    assert json.loads(http_server.last("/serper/search").body)["num"] == 4


def test_serper_without_key_names_the_variable():
    with pytest.raises(PrerequisiteError, match=r"\$SERPER_API_KEY is not set"):
        make("text_search", {"search": {"backend": "serper"}})


async def test_serper_bad_key_is_upstream_http_with_hint(http_server, fast_http, monkeypatch):
    monkeypatch.setenv("SERPER_API_KEY", "wrong")
    with pytest.raises(ToolError) as info:
        await make("text_search", serper_config(http_server, fast_http)).run({"q": "x"}, ImageStore())
    assert info.value.category == "upstream_http" and "403" in info.value.message
    assert "SERPER_API_KEY" in info.value.message


async def test_serper_429_then_success_is_retried(http_server, fast_http, monkeypatch):
    monkeypatch.setenv("SERPER_API_KEY", "test-key")
    before = http_server.count("/serper/search")
    result = await make("text_search", serper_config(http_server, fast_http)).run(
        {"q": "flaky-429-2"}, ImageStore()
    )
    assert "[Passage 1]" in result.text
    assert http_server.count("/serper/search") - before == 3


@pytest.mark.parametrize("status,category", [(429, "rate_limited"), (503, "upstream_http")])
async def test_persistent_upstream_failure_gives_up_with_category(
    http_server, fast_http, monkeypatch, status, category
):
    monkeypatch.setenv("SERPER_API_KEY", "test-key")
    before = http_server.count("/serper/search")
    with pytest.raises(ToolError) as info:
        await make("text_search", serper_config(http_server, fast_http)).run(
            {"q": f"flaky-{status}-9"}, ImageStore()
        )
    assert info.value.category == category and "after 3 attempts" in info.value.message
    assert http_server.count("/serper/search") - before == 3


async def test_results_summarized_by_openai_compatible_server(http_server, fast_http, monkeypatch):
    monkeypatch.setenv("SUMMARIZER_API_KEY", "sk-test")
    config = {
        "http": fast_http,
        "search": {"summarize": True},
        "summarizer": {"base_url": f"{http_server.base_url}/v1", "model": "tiny-summarizer"},
    }
    result = await make("text_search", config).run({"q": "Silverfen Bridge span", "top_k": 2}, ImageStore())
    assert result.text.count("SUMMARY for [Silverfen Bridge span]") == 2
    requests = [r for r in http_server.requests if r.path == "/v1/chat/completions"][-2:]
    assert all(r.headers["Authorization"] == "Bearer sk-test" for r in requests)
    bodies = [json.loads(r.body) for r in requests]
    assert all(b["model"] == "tiny-summarizer" for b in bodies)
    assert any(
        "38 metres" in b["messages"][0]["content"] for b in bodies
    )  # the full corpus page was summarized
