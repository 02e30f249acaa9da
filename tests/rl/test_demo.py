"""The RL main-job stage: real offline tools, Eq. 9 rewards, fatal_grpo through verl's compute_advantage."""

import asyncio

import pytest

pytest.importorskip("verl", reason="verl is not installed (pip install 'opensearch-vl[rl]')")


@pytest.mark.slow
def test_demo_table_shows_clamped_fatal_rollouts(tmp_path, tiny_model_dir):
    from opensearch_vl.plugins.verl.agent_loop import fatal_advantages
    from opensearch_vl.rl.demo import run_demo

    result = asyncio.run(run_demo(tmp_path, advantage_fn=fatal_advantages, model_dir=tiny_model_dir, tasks=1))
    rows = {r.variant: r for r in result.rows}
    assert rows["oracle"].reward == pytest.approx(0.8) and rows["oracle"].advantage > 0
    assert (
        rows["cascade@1"].fatal_step == 1 and rows["cascade@1"].clamped and rows["cascade@1"].advantage == 0.0
    )
    assert rows["cascade@0"].trainable_tokens == 0 and rows["cascade@0"].r_fmt == 0.0
    assert rows["wrong"].advantage < 0 and not rows["wrong"].is_fatal
    assert "clamp" in (tmp_path / "rl_demo_table.txt").read_text()
    # two rollouts sampled from the model itself, in the same group, through the same token path
    model_rows = [r for r in result.rows if r.variant.startswith("model#")]
    assert len(model_rows) == 2
    for row in model_rows:
        assert row.steps >= 1 and row.images >= 1
        assert row.reward >= 0.0 and (not row.is_fatal or row.advantage >= 0.0)
    assert len(list((tmp_path / "transcripts").glob("*.json"))) == 6
