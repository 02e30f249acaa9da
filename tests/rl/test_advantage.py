"""Fatal-aware advantages: hand-computed cases straight from the definitions (rl/advantage.py docstring)."""

import math

import numpy as np
import pytest
import torch
from opensearch_vl.rl.advantage import FatalAdvantageConfig, as_fatal_flags, fatal_group_advantage, group_ids

from opensearch_vl.errors import DataError

EPS = 1e-6


def outcome(rewards, length=6):
    """token_level_rewards with each row's reward on its last token, like a rollout producer."""
    t = torch.zeros(len(rewards), length)
    t[:, -1] = torch.tensor(rewards, dtype=torch.float32)
    return t


def rows(result):
    return result.row_advantage.tolist()


def test_fatal_at_step_zero_is_fully_masked_but_counts_in_the_group():
    # Row 1 failed at its first step: the producer zeroed its whole mask; its reward 0 still enters μ, σ.
    mask = torch.ones(4, 6)
    mask[1] = 0
    out = fatal_group_advantage(outcome([1, 0, 0, 1]), mask, ["q"] * 4, [False, True, False, False])
    r = 0.5 / (0.5 + EPS)  # μ = 0.5, population σ = 0.5
    assert rows(out) == pytest.approx([r, 0.0, -r, r])
    assert torch.all(out.advantages[1] == 0)
    assert out.advantages[0].tolist() == pytest.approx([r] * 6)
    assert out.stats.clamped == 1 and out.stats.clamped_rtilde_sum == pytest.approx(-r)


def test_fatal_at_last_step_keeps_its_prefix_and_a_positive_advantage():
    # Fatal rows with r̃ ≥ 0 keep r̃ on the tokens before the fatal step (the paper's preserved 8.2%).
    mask = torch.tensor([[1, 1, 0, 1, 1, 0], [1, 1, 0, 1, 0, 0], [1, 1, 1, 1, 1, 1]], dtype=torch.float32)
    out = fatal_group_advantage(outcome([1, 1, 0]), mask, ["q"] * 3, [False, True, False])
    mu, sigma = 2 / 3, math.sqrt(2 / 9)
    hi, lo = (1 - mu) / (sigma + EPS), (0 - mu) / (sigma + EPS)
    assert rows(out) == pytest.approx([hi, hi, lo])
    assert out.advantages[1].tolist() == pytest.approx([hi, hi, 0, hi, 0, 0])
    assert out.stats.fatal == 1 and out.stats.clamped == 0


def test_no_fatal_rows_is_plain_grpo_with_population_std():
    out = fatal_group_advantage(outcome([0.2, 0.6, 1.0]), torch.ones(3, 6), ["q"] * 3, [False] * 3)
    mu, sigma = 0.6, math.sqrt((0.16 + 0 + 0.16) / 3)
    assert rows(out) == pytest.approx([(r - mu) / (sigma + EPS) for r in (0.2, 0.6, 1.0)], abs=1e-6)
    assert out.stats.as_metrics() == {
        "fatal_adv/fatal_frac": 0.0,
        "fatal_adv/clamped_frac": 0.0,
        "fatal_adv/clamped_of_fatal_frac": 0.0,
        "fatal_adv/clamped_rtilde_mean": 0.0,
    }


def test_singleton_group_is_zero_by_default_and_raw_like_verl_on_request():
    zero = fatal_group_advantage(outcome([0.7]), torch.ones(1, 6), ["q"], [False])
    assert rows(zero) == [0.0]
    raw = fatal_group_advantage(
        outcome([0.7, 0.7]),
        torch.ones(2, 6),
        ["a", "b"],
        [False, True],
        FatalAdvantageConfig(singleton="raw"),
    )
    assert rows(raw) == pytest.approx([0.7 / (1 + EPS)] * 2)  # the fatal singleton is positive: kept
    raw_no_std = fatal_group_advantage(
        outcome([-0.7]),
        torch.ones(1, 6),
        ["a"],
        [True],
        FatalAdvantageConfig(singleton="raw", norm_by_std=False),
    )
    assert rows(raw_no_std) == [0.0] and raw_no_std.rtilde.tolist() == pytest.approx([-0.7])


def test_group_of_two_population_and_unbiased():
    pop = fatal_group_advantage(outcome([1, 0]), torch.ones(2, 6), ["q", "q"], [False, False])
    assert rows(pop) == pytest.approx([0.5 / (0.5 + EPS), -0.5 / (0.5 + EPS)])
    unb = fatal_group_advantage(
        outcome([1, 0]), torch.ones(2, 6), ["q", "q"], [False, True], FatalAdvantageConfig(std="unbiased")
    )
    assert rows(unb) == pytest.approx([0.5 / (math.sqrt(0.5) + EPS), 0.0])
    assert unb.rtilde.tolist() == pytest.approx([0.5 / (math.sqrt(0.5) + EPS), -0.5 / (math.sqrt(0.5) + EPS)])


def test_group_of_sixteen_with_fatal_rows_on_both_sides():
    rewards = [1.0] * 4 + [0.0] * 12
    fatal = [True, False, False, False] + [True] * 5 + [False] * 7
    out = fatal_group_advantage(outcome(rewards), torch.ones(16, 6), ["q"] * 16, fatal)
    sigma = math.sqrt(0.25 * 0.75)
    hi, lo = 0.75 / (sigma + EPS), -0.25 / (sigma + EPS)
    assert rows(out) == pytest.approx([hi] * 4 + [0.0] * 5 + [lo] * 7)
    m = out.stats.as_metrics()
    assert m["fatal_adv/fatal_frac"] == 6 / 16 and m["fatal_adv/clamped_frac"] == 5 / 16
    assert m["fatal_adv/clamped_of_fatal_frac"] == 5 / 6
    assert m["fatal_adv/clamped_rtilde_mean"] == pytest.approx(lo)


@pytest.mark.parametrize("value", [0.1, 0.3, 1 / 3, 7.0])
def test_all_equal_group_is_exactly_zero(value):
    # float mean of equal non-dyadic values is not always the value itself; /(0+ε) would blow that up
    out = fatal_group_advantage(outcome([value] * 7), torch.ones(7, 6), ["q"] * 7, [True] + [False] * 6)
    assert torch.all(out.advantages == 0) and out.stats.clamped == 0
    rloo = fatal_group_advantage(
        outcome([value] * 7), torch.ones(7, 6), ["q"] * 7, [False] * 7, baseline="rloo"
    )
    assert torch.all(rloo.advantages == 0)


def test_ties_get_identical_advantages_whatever_the_fatal_flag_when_positive():
    out = fatal_group_advantage(
        outcome([1, 1, 0, 0]), torch.ones(4, 6), ["q"] * 4, [True, False, True, False]
    )
    a = rows(out)
    assert a[0] == a[1] > 0 and a[2] == 0.0 and a[3] < 0


def test_interleaved_groups_are_separated_by_uid():
    uids = np.array(["b", "a", "b", "a", "c"], dtype=object)
    out = fatal_group_advantage(outcome([1, 5, 0, 5, 3]), torch.ones(5, 6), uids, [False] * 5)
    r = 0.5 / (0.5 + EPS)
    assert rows(out) == pytest.approx([r, 0.0, -r, 0.0, 0.0])


def test_modes_hard_mask_and_no_clamp():
    args = (outcome([1, 0, 0, 1]), torch.ones(4, 6), ["q"] * 4, [True, True, False, False])
    r = 0.5 / (0.5 + EPS)
    assert rows(fatal_group_advantage(*args, FatalAdvantageConfig(mode="no_clamp"))) == pytest.approx(
        [r, -r, -r, r]
    )
    hard = fatal_group_advantage(*args, FatalAdvantageConfig(mode="hard_mask"))
    assert rows(hard) == pytest.approx([0.0, 0.0, -r, r]) and hard.stats.clamped == 2
    assert rows(fatal_group_advantage(*args)) == pytest.approx([r, 0.0, -r, r])


def test_no_std_normalisation_is_r_minus_mean():
    out = fatal_group_advantage(
        outcome([1, 0, 0, 0]),
        torch.ones(4, 6),
        ["q"] * 4,
        [False, True, False, False],
        FatalAdvantageConfig(norm_by_std=False),
    )
    assert rows(out) == pytest.approx([0.75, 0.0, -0.25, -0.25])


def test_rloo_is_reward_minus_mean_of_the_others_then_clamped():
    out = fatal_group_advantage(
        outcome([1, 0, 0, 1]), torch.ones(4, 6), ["q"] * 4, [False, True, False, True], baseline="rloo"
    )
    assert rows(out) == pytest.approx([1 - 1 / 3, 0.0, 0 - 2 / 3, 1 - 1 / 3])


def test_mask_dtypes_and_padding_are_respected():
    mask = torch.tensor([[1, 1, 0, 0, 0, 0], [1, 0, 1, 0, 0, 0]], dtype=torch.bool)
    out = fatal_group_advantage(outcome([1, 0]), mask, ["q", "q"], np.array([0, 1]))
    assert out.advantages.dtype == torch.float32
    assert torch.all(out.advantages[~mask] == 0) and torch.all(out.advantages[mask][:2] > 0)


def test_bad_inputs_name_the_problem():
    with pytest.raises(DataError, match="booleans"):
        as_fatal_flags(np.array(["False", "True"], dtype=object), 2)
    with pytest.raises(DataError, match="booleans"):
        as_fatal_flags(np.array([None, True], dtype=object), 2)
    with pytest.raises(DataError, match=r"expected \(3,\)"):
        as_fatal_flags([True], 3)
    with pytest.raises(DataError, match="one uid per row"):
        fatal_group_advantage(outcome([1, 0]), torch.ones(2, 6), ["q"], [False, False])
    with pytest.raises(DataError, match="response_mask"):
        fatal_group_advantage(outcome([1, 0]), torch.ones(2, 5), ["q", "q"], [False, False])
    with pytest.raises(DataError, match="comparable"):
        group_ids(np.array(["a", 1], dtype=object))
    assert group_ids(["z", "y", "z"])[0].tolist() == [1, 0, 1]
