"""image_search: the local gallery (bundled and CLI-built) and Lens with the uploader."""

from __future__ import annotations

import json

import pytest
from opensearch_vl.tools_env.backends.gallery import GalleryIndex, bundled_gallery_path
from opensearch_vl.tools_env.config import ToolEnvConfig
from opensearch_vl.tools_env.images import ImageStore
from opensearch_vl.tools_env.tool import tool_factory
from PIL import Image, ImageEnhance

from opensearch_vl.cli.main import main as cli
from opensearch_vl.errors import ConfigError, ToolError


def make(config=None):
    return tool_factory("image_search")(ToolEnvConfig.model_validate(config or {}), None)


def store_with(*images):
    store = ImageStore()
    for image in images:
        store.add(image)
    return store


def gallery_image(name="kestrel_point_lighthouse.png"):
    return Image.open(bundled_gallery_path() / name).convert("RGB")


async def test_identifies_bundled_scene_by_id():
    result = await make().run({"url": "img_1"}, store_with(gallery_image()))
    assert result.text.splitlines()[:3] == [
        "Visual matches for img_1 (1):",
        "[Match 1] Kestrel Point Lighthouse",
        "URL: https://en.example.org/wiki/Kestrel_Point_Lighthouse",
    ]
    assert result.info == {"backend": "local_gallery", "matches": 1}


async def test_matches_survive_resize_jpeg_and_brightness():
    import io

    image = gallery_image("orrin_clock_tower.png").resize((240, 180))
    buf = io.BytesIO()
    ImageEnhance.Brightness(image).enhance(1.15).save(buf, format="JPEG", quality=70)
    store = ImageStore()
    store.add(buf.getvalue())
    result = await make().run({"image": "img_1"}, store)
    assert "[Match 1] Orrin Clock Tower" in result.text


async def test_unrelated_image_has_no_matches():
    noise = Image.effect_noise((200, 150), 80).convert("RGB")
    result = await make().run({"url": "img_1"}, store_with(noise))
    assert result.text == "No visual matches for img_1 in the image gallery." and result.info["matches"] == 0


async def test_unknown_ref_and_missing_argument():
    with pytest.raises(ToolError) as info:
        await make().run({"url": "img_4"}, store_with(gallery_image()))
    assert info.value.category == "not_found"
    with pytest.raises(ToolError) as info:
        await make().run({}, store_with(gallery_image()))
    assert info.value.category == "bad_arguments"


async def test_image_url_fetched_under_url_policy(http_server, fast_http):
    url = f"{http_server.base_url}/images/tallow_peak.png"
    result = await make({"allow_private_urls": True, "http": fast_http}).run({"url": url}, ImageStore())
    assert "[Match 1] Tallow Peak at sunrise" in result.text
    with pytest.raises(ToolError, match="loopback"):
        await make({"http": fast_http}).run({"url": url}, ImageStore())
    with pytest.raises(ToolError, match="content type"):
        await make({"allow_private_urls": True, "http": fast_http}).run(
            {"url": f"{http_server.base_url}/pages/article.html"}, ImageStore()
        )


def test_cli_builds_gallery_from_folder_and_manifest(tmp_path, capsys):
    folder = tmp_path / "photos"
    folder.mkdir()
    gallery_image("silverfen_bridge.png").save(folder / "old_bridge.png")
    gallery_image("tallow_peak.png").save(folder / "mountain-view.png")
    out = tmp_path / "g.sqlite"
    assert cli(["index", "build-gallery", str(folder), "--out", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["images"] == 2
    index = GalleryIndex.load(out)
    assert index.search(gallery_image("silverfen_bridge.png"), top_k=1)[0].title == "old bridge"
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text(
        json.dumps(
            {
                "image": "photos/old_bridge.png",
                "title": "Bridge",
                "url": "https://b.example/x",
                "source": "b.example",
            }
        )
        + "\n"
    )
    assert cli(["index", "build-gallery", str(manifest), "--out", str(tmp_path / "m.sqlite")]) == 0
    match = GalleryIndex.load(tmp_path / "m.sqlite").search(gallery_image("silverfen_bridge.png"))[0]
    assert (match.title, match.url, match.source, match.distance) == (
        "Bridge",
        "https://b.example/x",
        "b.example",
        0,
    )


async def test_configured_gallery_is_used(tmp_path):
    from opensearch_vl.tools_env.backends.gallery import build_gallery_index

    folder = tmp_path / "g"
    folder.mkdir()
    gallery_image("blue_heron_mural.png").save(folder / "heron.png")
    build_gallery_index(folder, tmp_path / "g.sqlite")
    tool = make({"image_search": {"gallery_index": str(tmp_path / "g.sqlite")}})
    result = await tool.run({"url": "img_1"}, store_with(gallery_image("blue_heron_mural.png")))
    assert "[Match 1] heron" in result.text


def lens_config(http_server, fast_http, **image_search):
    return {
        "http": fast_http,
        "search": {"serper_base_url": f"{http_server.base_url}/serper"},
        "image_search": {"backend": "serper_lens", **image_search},
    }


async def test_lens_with_public_url(http_server, fast_http, monkeypatch):
    monkeypatch.setenv("SERPER_API_KEY", "test-key")
    result = await make(lens_config(http_server, fast_http)).run(
        {"url": "https://cdn.example.org/a/photo.jpg"}, ImageStore()
    )
    assert json.loads(http_server.last("/serper/lens").body) == {
        "url": "https://cdn.example.org/a/photo.jpg",
        "hl": "en",
        "gl": "us",
    }
    assert result.text.splitlines()[:4] == [
        "Visual matches for https://cdn.example.org/a/photo.jpg (2):",
        "[Match 1] Lens match for photo.jpg",
        "URL: https://example.org/lens1",
        "Source: Example",
    ]


async def test_lens_reads_visual_matches_shape(http_server, fast_http, monkeypatch):
    monkeypatch.setenv("SERPER_API_KEY", "test-key")
    result = await make(lens_config(http_server, fast_http)).run(
        {"url": "https://cdn.example.org/visual.png"}, ImageStore()
    )
    assert "[Match 1] Visual visual.png" in result.text


async def test_lens_local_image_without_uploader_is_refused_clearly(http_server, fast_http, monkeypatch):
    monkeypatch.setenv("SERPER_API_KEY", "test-key")
    with pytest.raises(ToolError) as info:
        await make(lens_config(http_server, fast_http)).run({"url": "img_1"}, store_with(gallery_image()))
    assert "no uploader is configured" in info.value.message and "image_search.uploader" in info.value.message


async def test_lens_local_image_through_directory_uploader(http_server, fast_http, monkeypatch, tmp_path):
    monkeypatch.setenv("SERPER_API_KEY", "test-key")
    config = lens_config(
        http_server,
        fast_http,
        uploader="directory",
        upload_dir=str(tmp_path / "pub"),
        upload_base_url="https://static.example.org/up",
    )
    store = store_with(gallery_image())
    result = await make(config).run({"url": "img_1"}, store)
    sha = store.record("img_1").sha256
    assert (
        json.loads(http_server.last("/serper/lens").body)["url"] == f"https://static.example.org/up/{sha}.png"
    )
    assert (tmp_path / "pub" / f"{sha}.png").read_bytes() == store.record("img_1").png
    assert result.info["image_url"].endswith(f"{sha}.png")


def test_directory_uploader_needs_both_settings(monkeypatch):
    monkeypatch.setenv("SERPER_API_KEY", "test-key")
    with pytest.raises(ConfigError, match="upload_base_url"):
        make({"image_search": {"backend": "serper_lens", "uploader": "directory", "upload_dir": "/tmp/x"}})


async def test_lens_refuses_metadata_and_file_urls(http_server, fast_http, monkeypatch):
    monkeypatch.setenv("SERPER_API_KEY", "test-key")
    tool = make(lens_config(http_server, fast_http))
    for url in ("http://169.254.169.254/latest/meta-data/iam", "http://[::1]/x.png"):
        with pytest.raises(ToolError, match="refused"):
            await tool.run({"url": url}, ImageStore())
