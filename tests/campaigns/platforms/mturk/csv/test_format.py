"""The batch CSV's cells read strictly: a Reward is dollars and cents written plainly."""

from __future__ import annotations

from decimal import Decimal

import pytest

from campaigns.platforms.mturk.csv.format import CellError, mturk_reward_parse


@pytest.mark.parametrize(
    "cell", ["$1e1", "1_0", "$\uff11", "NaN", "$sNaN", "Infinity", "-1", "$0.005"]
)
def test_a_reward_decimal_would_read_is_a_cell_error(cell):
    with pytest.raises(CellError, match="is not an amount like"):
        mturk_reward_parse(cell)


@pytest.mark.parametrize(
    ("cell", "amount"), [("$1.25", "1.25"), ("USD 0.5", "0.50"), ("2", "2.00")]
)
def test_plain_rewards(cell, amount):
    assert mturk_reward_parse(cell) == Decimal(amount)
    assert mturk_reward_parse("  ") is None
