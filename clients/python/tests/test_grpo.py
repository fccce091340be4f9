import math

import pytest

from clotho_client import advantages, batch_advantages


def test_z_normalises_scores_within_the_group_with_population_std() -> None:
    # mean 2.5, population std sqrt(1.25): numpy's default (ddof=0), as Atropos's trainer uses.
    got = advantages({"scores": [1.0, 2.0, 3.0, 4.0]})
    std = math.sqrt(1.25)
    assert got == pytest.approx([-1.5 / std, -0.5 / std, 0.5 / std, 1.5 / std], abs=1e-12)


def test_binary_rewards_give_plus_and_minus_one() -> None:
    assert advantages({"scores": [1, 0, 0, 1]}) == [1.0, -1.0, -1.0, 1.0]


def test_equal_scores_give_zeros_not_a_division_by_zero() -> None:
    assert advantages({"scores": [0.7, 0.7, 0.7]}) == [0.0, 0.0, 0.0]


def test_a_tiny_spread_is_divided_by_the_floor_of_1e_8() -> None:
    got = advantages({"scores": [0.0, 2e-9]})
    assert got == pytest.approx([-0.1, 0.1], rel=1e-6)


def test_a_single_sample_gets_zero() -> None:
    assert advantages({"scores": [5.0]}) == [0.0]
    assert advantages({"scores": []}) == []


def test_set_advantage_to_zero_overrides_only_that_sample() -> None:
    group = {"scores": [1.0, 0.0, 0.0, 1.0], "overrides": [{}, {"set_advantage_to_zero": True}, None, {"set_advantage_to_zero": False}]}
    assert advantages(group) == [1.0, 0.0, -1.0, 1.0]


def test_null_overrides_are_ignored_and_each_group_is_normalised_alone() -> None:
    groups = [{"scores": [1.0, 0.0], "overrides": None}, {"scores": [10.0, 30.0]}]
    assert batch_advantages(groups) == [[1.0, -1.0], [-1.0, 1.0]]
