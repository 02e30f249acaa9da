"""Properties of the fatal-aware advantages, and agreement with verl's own grpo/rloo when nothing is fatal."""

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opensearch_vl.rl.advantage import FatalAdvantageConfig, fatal_group_advantage

core_algos = pytest.importorskip("verl.trainer.ppo.core_algos")

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def batches(draw, max_rows=24, length=5):
    """Rows with uids (1-4 groups, any sizes, interleaved), dyadic rewards, random masks and fatal flags."""
    n = draw(st.integers(1, max_rows))
    uid = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=n, max_size=n))
    # multiples of 1/4 keep sums exact, so verl's float32 loop and our float64 scatter see the same scores
    reward = draw(st.lists(st.integers(-8, 8), min_size=n, max_size=n))
    mask = draw(st.lists(st.lists(st.booleans(), min_size=length, max_size=length), min_size=n, max_size=n))
    fatal = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    token_rewards = torch.zeros(n, length)
    token_rewards[:, -1] = torch.tensor(reward, dtype=torch.float32) / 4
    return (
        token_rewards,
        torch.tensor(mask, dtype=torch.float32),
        np.array(uid, dtype=object),
        np.array(fatal),
    )


modes = st.sampled_from(["clamp", "no_clamp", "hard_mask"])
baselines = st.sampled_from(["grpo", "rloo"])


@SETTINGS
@given(batches(), modes, baselines, st.booleans())
def test_masked_tokens_are_zero_and_fatal_rows_never_negative(batch, mode, baseline, norm):
    rewards, mask, uid, fatal = batch
    out = fatal_group_advantage(
        rewards, mask, uid, fatal, FatalAdvantageConfig(mode=mode, norm_by_std=norm), baseline
    )
    assert torch.all(out.advantages[mask == 0] == 0)
    assert out.returns is out.advantages
    fatal_t = torch.from_numpy(fatal)
    if mode == "clamp":
        assert torch.all(out.row_advantage[fatal_t] >= 0)
        assert torch.all(out.row_advantage[fatal_t] == out.rtilde[fatal_t].clamp(min=0))
    if mode == "hard_mask":
        assert torch.all(out.advantages[fatal_t] == 0)
    # the fatal rule never touches non-fatal rows, and fatal rows stay in the group statistics
    assert torch.equal(out.row_advantage[~fatal_t], out.rtilde[~fatal_t])
    unflagged = fatal_group_advantage(
        rewards, mask, uid, np.zeros_like(fatal), FatalAdvantageConfig(mode=mode, norm_by_std=norm), baseline
    )
    assert torch.equal(out.rtilde, unflagged.rtilde)


@SETTINGS
@given(batches(), st.booleans())
def test_without_fatal_rows_equals_verl_grpo_under_its_conventions(batch, norm):
    rewards, mask, uid, _ = batch
    verl_adv, verl_ret = core_algos.compute_grpo_outcome_advantage(
        token_level_rewards=rewards, response_mask=mask, index=uid, norm_adv_by_std_in_grpo=norm
    )
    cfg = FatalAdvantageConfig(std="unbiased", singleton="raw", norm_by_std=norm)
    ours = fatal_group_advantage(rewards, mask, uid, np.zeros(len(uid), dtype=bool), cfg)
    torch.testing.assert_close(ours.advantages, verl_adv, atol=2e-6, rtol=1e-5)


@SETTINGS
@given(batches())
def test_without_fatal_rows_equals_verl_rloo(batch):
    rewards, mask, uid, _ = batch
    verl_adv, _ = core_algos.compute_rloo_outcome_advantage(
        token_level_rewards=rewards, response_mask=mask, index=uid
    )
    ours = fatal_group_advantage(
        rewards, mask, uid, np.zeros(len(uid), dtype=bool), FatalAdvantageConfig(singleton="raw"), "rloo"
    )
    torch.testing.assert_close(ours.advantages, verl_adv, atol=2e-6, rtol=1e-5)


@SETTINGS
@given(batches(), st.permutations(range(24)))
def test_row_order_does_not_matter(batch, perm):
    rewards, mask, uid, fatal = batch
    p = [i for i in perm if i < len(uid)]
    a = fatal_group_advantage(rewards, mask, uid, fatal)
    b = fatal_group_advantage(rewards[p], mask[p], uid[p], fatal[p])
    torch.testing.assert_close(a.advantages[p], b.advantages)
