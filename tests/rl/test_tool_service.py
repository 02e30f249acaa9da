"""The Ray tool pool: calls run on named actors, produced images come back under the same ids."""

from __future__ import annotations

import asyncio

import pytest
from opensearch_vl.rl.agent import RLAgentSettings, ToolServiceSettings
from opensearch_vl.rl.tool_service import RemoteToolEnvironment, environment_for, start_tool_pool
from opensearch_vl.tools_env.config import ToolEnvConfig
from opensearch_vl.tools_env.environment import ToolEnvironment
from PIL import Image


def test_in_process_environment_is_shared_per_settings():
    a = environment_for(RLAgentSettings.model_validate({"tools": {"tools": ["crop"]}}))
    b = environment_for(RLAgentSettings.model_validate({"tools": {"tools": ["crop"]}}))
    assert a is b and isinstance(a, ToolEnvironment)


@pytest.mark.slow
def test_ray_pool_matches_in_process_results():
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'opensearch-vl[ray]')")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        config = ToolEnvConfig(tools=["crop", "sharpen"])
        service = ToolServiceSettings(mode="ray", num_actors=2, max_concurrent_calls=64, name="test_tools")
        remote = RemoteToolEnvironment(config, start_tool_pool(config, service))
        local = ToolEnvironment(config)

        async def calls(env):
            store = env.new_store()
            store.add(Image.new("RGB", (64, 48), (10, 200, 30)))
            store.add(Image.new("RGB", (32, 32), (200, 10, 30)))
            crop = await env.execute(
                "crop", {"image": "img_2", "x": 4, "y": 4, "width": 10, "height": 8}, store
            )
            sharp = [
                await env.execute("sharpen", {"image": "img_3"}, store) for _ in range(8)
            ]  # one episode: in turn
            bad = await env.execute(
                "crop", {"image": "img_99", "x": 0, "y": 0, "width": 1, "height": 1}, store
            )
            return store, crop, sharp, bad

        r_store, r_crop, r_sharp, r_bad = asyncio.run(calls(remote))
        l_store, l_crop, l_sharp, l_bad = asyncio.run(calls(local))
        assert r_crop.text == l_crop.text and r_crop.image_ids == ("img_3",)
        assert (
            r_store.get("img_3").size == (10, 8)
            and r_store.record("img_3").sha256 == l_store.record("img_3").sha256
        )
        assert len(r_store) == len(l_store) == 11
        assert [o.image_ids for o in r_sharp] == [o.image_ids for o in l_sharp]

        async def episodes(env, n):  # many episodes at once, each with its own store
            async def one():
                store = env.new_store()
                store.add(Image.new("RGB", (40, 40), (9, 9, 9)))
                return await env.execute("sharpen", {"image": "img_1"}, store), store

            return await asyncio.gather(*(one() for _ in range(n)))

        results = asyncio.run(episodes(remote, 32))
        assert all(o.image_ids == ("img_2",) and len(s) == 2 for o, s in results)
        assert r_bad.error and r_bad.category == l_bad.category == "not_found"
        # the same named pool is found again, not recreated
        again = start_tool_pool(config, service)
        served = sum(s["calls"] for s in ray.get([h.stats.remote() for h in again]))
        assert served >= 10
    finally:
        ray.shutdown()
