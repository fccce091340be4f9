"""The run's view of the taskset, served from any position: a restarted worker, another worker, a new epoch."""

import pytest

from clotho_verifiers.cursor import TaskCursor
from clotho_verifiers.loading import load, resolve_spec


@pytest.fixture
def cursor(envs):
    config, env = load(resolve_spec(str(envs / "arith_env.py")), ["--env.taskset.count", "5", "-n", "4"])
    return TaskCursor(env, config.select)


def prompts(tasks):
    return [task["prompt"].split("?")[0] for task in tasks]


def test_it_takes_the_view_in_order_and_says_when_it_ends(cursor):
    first, exhausted = cursor.take(0, 3)
    assert prompts(first) == ["What is 0 + 3", "What is 1 + 4", "What is 2 + 5"]
    assert not exhausted
    rest, exhausted = cursor.take(3, 3)
    # -n 4: the view ends after the fourth task.
    assert prompts(rest) == ["What is 3 + 6"]
    assert exhausted


def test_a_request_at_another_position_is_served_from_there(cursor):
    cursor.take(0, 1)
    again, _ = cursor.take(2, 1)
    assert prompts(again) == ["What is 2 + 5"]
    back, _ = cursor.take(0, 1)
    assert prompts(back) == ["What is 0 + 3"]


def test_a_task_travels_as_its_wire_data_and_comes_back_whole(cursor):
    (data,), _ = cursor.take(1, 1)
    task = cursor.task(data)
    assert task.data.answer == 5
    assert task.data.idx == 1
    assert task.hash == next(t for t in cursor.view() if t.data.idx == 1).hash


def test_cycling_serves_the_view_again_epoch_after_epoch(cursor):
    tasks, exhausted = cursor.take(3, 3, cycle=True)
    assert prompts(tasks) == ["What is 3 + 6", "What is 0 + 3", "What is 1 + 4"]
    assert not exhausted
