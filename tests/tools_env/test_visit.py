"""visit: corpus pages offline, direct HTTP with every limit, Jina Reader, and goal-conditioned summaries."""

from __future__ import annotations

import pytest
from opensearch_vl.tools_env.config import ToolEnvConfig
from opensearch_vl.tools_env.images import ImageStore
from opensearch_vl.tools_env.tool import tool_factory

from opensearch_vl.errors import ToolError


def make(config=None):
    return tool_factory("visit")(ToolEnvConfig.model_validate(config or {}), None)


def http_config(fast_http, **visit):
    return {"allow_private_urls": True, "http": fast_http, "visit": {"backend": "http", **visit}}


async def test_offline_visit_serves_corpus_page():
    result = await make().run(
        {"url": "https://en.example.org/wiki/Tallow_Peak", "goal": "first ascent"}, ImageStore()
    )
    assert result.text.splitlines()[:4] == [
        "Page: Tallow Peak",
        "URL: https://en.example.org/wiki/Tallow_Peak",
        "Goal: first ascent",
        "Content (full text):",
    ]
    assert "1857 by the surveyor Ada Brenn" in result.text
    assert result.info["source"] == "local_corpus"


async def test_offline_visit_outside_corpus_is_not_found_with_fix():
    with pytest.raises(ToolError) as info:
        await make().run({"url": "https://www.python.org/", "goal": "x"}, ImageStore())
    assert info.value.category == "not_found" and "visit.backend: http or jina" in info.value.message


async def test_http_fetch_extracts_main_text(http_server, fast_http):
    result = await make(http_config(fast_http)).run(
        {"url": f"{http_server.base_url}/pages/article.html", "goal": "paint used"}, ImageStore()
    )
    assert "Page: Heron Festival 2016" in result.text
    assert "twenty-two litres of paint" in result.text
    assert "newsletter" not in result.text and "All rights reserved" not in result.text
    assert result.info["source"] == "http_fetch"


async def test_http_fetch_plain_text(http_server, fast_http):
    result = await make(http_config(fast_http)).run(
        {"url": f"{http_server.base_url}/pages/plain.txt"}, ImageStore()
    )
    assert "Just plain text about herons." in result.text


async def test_redirects_followed_up_to_the_cap(http_server, fast_http):
    tool = make(http_config(fast_http, max_redirects=3))
    result = await tool.run({"url": f"{http_server.base_url}/pages/redirect?n=3"}, ImageStore())
    assert result.info["final_url"] == f"{http_server.base_url}/pages/article.html"
    with pytest.raises(ToolError) as info:
        await tool.run({"url": f"{http_server.base_url}/pages/redirect?n=4"}, ImageStore())
    assert info.value.category == "upstream_http" and "more than 3 times" in info.value.message


async def test_wrong_content_type_refused(http_server, fast_http):
    with pytest.raises(ToolError, match="content type 'application/pdf'"):
        await make(http_config(fast_http)).run(
            {"url": f"{http_server.base_url}/pages/report.pdf"}, ImageStore()
        )


@pytest.mark.parametrize("chunked", ["0", "1"])
async def test_size_cap_with_and_without_content_length(http_server, fast_http, chunked):
    tool = make(http_config(fast_http, max_page_bytes=50_000))
    with pytest.raises(ToolError, match="50000-byte cap"):
        await tool.run(
            {"url": f"{http_server.base_url}/pages/big?size=300000&chunked={chunked}"}, ImageStore()
        )


async def test_404_is_not_found(http_server, fast_http):
    with pytest.raises(ToolError) as info:
        await make(http_config(fast_http)).run({"url": f"{http_server.base_url}/pages/nothing"}, ImageStore())
    assert info.value.category == "not_found" and "404" in info.value.message


async def test_5xx_retried_then_succeeds(http_server, fast_http):
    result = await make(http_config(fast_http)).run(
        {"url": f"{http_server.base_url}/pages/flaky?key=flaky-502-2-visit"}, ImageStore()
    )
    assert "server recovered" in result.text
    assert http_server.count("/pages/flaky?key=flaky-502-2-visit") == 3


async def test_read_timeout_is_timeout_category(http_server):
    config = {
        "allow_private_urls": True,
        "visit": {"backend": "http"},
        "http": {"read_timeout_s": 0.3, "max_attempts": 2, "backoff_base_s": 0.0},
    }
    with pytest.raises(ToolError) as info:
        await make(config).run({"url": f"{http_server.base_url}/pages/slow?s=1.5"}, ImageStore())
    assert info.value.category == "timeout" and "after 2 attempts" in info.value.message


async def test_corpus_pages_served_without_network_in_http_mode(http_server, fast_http):
    before = len(http_server.requests)
    result = await make(http_config(fast_http)).run(
        {"url": "https://en.example.org/wiki/Harbor_Cafe"}, ImageStore()
    )
    assert result.info["source"] == "local_corpus" and len(http_server.requests) == before


async def test_private_urls_refused_by_default_in_http_mode(http_server, fast_http):
    config = {"http": fast_http, "visit": {"backend": "http"}}
    with pytest.raises(ToolError, match="loopback"):
        await make(config).run({"url": f"{http_server.base_url}/pages/article.html"}, ImageStore())


@pytest.mark.parametrize("api_key", [None, "jina-key"])
async def test_jina_reader_json(http_server, fast_http, monkeypatch, api_key):
    if api_key:
        monkeypatch.setenv("JINA_API_KEY", api_key)
    config = {
        "allow_private_urls": True,
        "http": fast_http,
        "visit": {"backend": "jina", "jina_base_url": f"{http_server.base_url}/jina"},
    }
    result = await make(config).run({"url": "https://example.com/tower", "goal": "height"}, ImageStore())
    sent = http_server.last("/jina/")
    assert sent.path == "/jina/https://example.com/tower" and sent.headers["Accept"] == "application/json"
    assert sent.headers.get("Authorization") == (f"Bearer {api_key}" if api_key else None)
    assert "Page: Jina page" in result.text and "31 metres" in result.text
    assert result.info["source"] == "jina_reader"


async def test_jina_error_and_policy(http_server, fast_http):
    config = {
        "http": fast_http,
        "visit": {"backend": "jina", "jina_base_url": f"{http_server.base_url}/jina"},
    }
    with pytest.raises(ToolError) as info:
        await make(config).run({"url": "https://example.com/missing"}, ImageStore())
    assert info.value.category == "upstream_http" and "422" in info.value.message
    with pytest.raises(ToolError, match="cloud metadata"):
        await make(config).run({"url": "http://169.254.169.254/latest"}, ImageStore())


async def test_goal_conditioned_summary_via_chat_server(http_server, fast_http):
    config = {**http_config(fast_http), "summarizer": {"base_url": f"{http_server.base_url}/v1"}}
    result = await make(config).run(
        {"url": f"{http_server.base_url}/pages/article.html", "goal": "visitor numbers"}, ImageStore()
    )
    assert "Content (llm:Qwen/Qwen3-32B):\nSUMMARY for [visitor numbers]" in result.text
    assert "forty thousand visitors" in http_server.last("/v1/chat/completions").body.decode()


async def test_malformed_chat_reply_is_upstream_http(http_server, fast_http, monkeypatch):
    monkeypatch.setenv("SUMMARIZER_API_KEY", "broken")
    config = {"http": fast_http, "summarizer": {"base_url": f"{http_server.base_url}/v1"}}
    with pytest.raises(ToolError, match="OpenAI-compatible"):
        await make(config).run({"url": "https://en.example.org/wiki/Orrin", "goal": "festival"}, ImageStore())


async def test_long_page_without_summarizer_keeps_goal_relevant_sentences():
    config = {"visit": {"max_page_chars": 120}}
    result = await make(config).run(
        {
            "url": "https://en.example.org/wiki/Kestrel_Point_Lighthouse",
            "goal": "when was the light automated",
        },
        ImageStore(),
    )
    assert "Content (extractive (most goal-relevant sentences)):" in result.text
    assert "automated in 1983" in result.text and "19 nautical miles" not in result.text
