"""How long bringing a restarted process's iterator to item 10,000 takes (issue 24 asks for the figure)."""

import asyncio
import time

import pytest

from clotho_atropos import AtroposActivities, build_env, load_env_class
from conftest import ENVS

ITEMS = 10_000


@pytest.mark.parametrize("hf_dataset", ["false", "true"], ids=["list", "datasets.Dataset"])
def test_fast_forward_10000_items(flags, hf_dataset: str) -> None:
    argv = flags("serve", "--env.dataset_size", str(ITEMS + 1), "--env.hf_dataset", hf_dataset)
    env_cls = load_env_class(str(ENVS / "arithmetic_env.py"))
    first = AtroposActivities(build_env(env_cls, argv))
    restarted = AtroposActivities(build_env(env_cls, argv))

    async def scenario():
        await first.env.setup()
        await restarted.env.setup()
        expected = (await first.cursor.item_at(ITEMS)).item  # itself a fast-forward, from 0
        started = time.perf_counter()
        taken = await restarted.cursor.item_at(ITEMS)
        return expected, taken, time.perf_counter() - started

    expected, taken, seconds = asyncio.run(scenario())
    assert taken.item == expected and taken.fast_forwarded == ITEMS
    print(f"\nfast-forward of {ITEMS} items ({'datasets.Dataset' if hf_dataset == 'true' else 'list'}): "
          f"{taken.fast_forward_seconds * 1000:.0f} ms ({taken.fast_forward_seconds / ITEMS * 1e6:.1f} µs per item), item_at {seconds * 1000:.0f} ms")
    assert taken.fast_forward_seconds < 30
