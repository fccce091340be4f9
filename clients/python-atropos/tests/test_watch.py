"""Where an environment's task is (its stack, down to the code that holds a blocked loop) and its last output."""

import asyncio
import io
import json
import sys
import threading
from typing import Callable, Iterator

import pytest

from clotho_atropos.watch import BLOCKED_BY_ANOTHER, LINE_CHARS, STACK_LINES, EnvLoop, OutputTail, where


def spin(release: list) -> None:
    """Holds the loop until ``release`` is non-empty, calling nothing (so it is the innermost frame)."""
    while not release:
        pass


async def spinning(release: list, running: threading.Event) -> None:
    running.set()
    spin(release)


async def nap(release: list) -> None:
    while not release:
        await asyncio.sleep(0.01)


def functions(stack: list[str]) -> list[str]:
    return [line.rsplit(" in ", 1)[1] for line in stack]


class LoopThread:
    """An event loop on a thread of its own, as the environment's is seen from the Temporal worker's thread; its
    tasks spin or nap until ``release`` is non-empty, ``running`` set once one spins."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.env_loop = EnvLoop(self.loop, self.thread.ident)
        self.release: list = []
        self.running = threading.Event()

    def task(self, make: Callable) -> asyncio.Task:
        """A task of ``make()`` on the loop, returned before it first runs (it may hold the loop from then on)."""
        made: list = []
        created = threading.Event()

        def create() -> None:
            made.append(self.loop.create_task(make()))
            created.set()

        self.loop.call_soon_threadsafe(create)
        assert created.wait(5)
        return made[0]

    def nap(self) -> asyncio.Task:
        return self.task(lambda: nap(self.release))

    def spin(self) -> asyncio.Task:
        task = self.task(lambda: spinning(self.release, self.running))
        assert self.running.wait(5)
        return task

    def where(self, task: asyncio.Task, blocked: bool) -> list[str]:
        return where(task.get_coro(), task, self.env_loop, blocked)

    def blocked(self) -> bool:
        """Probes the loop: False as soon as it turns, True when it has not turned in 0.3 s (and the probe waits)."""
        self.env_loop.blocked_for()
        turned = threading.Event()
        self.loop.call_soon_threadsafe(turned.set)
        return not turned.wait(0.3) and self.env_loop.blocked_for() > 0


@pytest.fixture
def env() -> Iterator[LoopThread]:
    env = LoopThread()
    yield env
    env.release.append(True)
    env.loop.call_soon_threadsafe(env.loop.stop)
    env.thread.join(5)


def test_a_waiting_task_shows_where_it_awaits(env: LoopThread) -> None:
    task = env.nap()
    assert not env.blocked()
    stack = env.where(task, blocked=False)
    assert functions(stack) == ["nap", "sleep"] and stack[0].startswith("test_watch.py:") and stack[1].startswith("asyncio/tasks.py:")


def test_a_task_that_holds_the_loop_shows_the_code_that_holds_it(env: LoopThread) -> None:
    task = env.spin()
    assert env.blocked()
    assert functions(env.where(task, blocked=True)) == ["spinning", "spin"]


def test_a_task_waiting_behind_another_that_holds_the_loop_shows_both(env: LoopThread) -> None:
    waiting = env.nap()
    env.spin()
    assert env.blocked()
    stack = env.where(waiting, blocked=True)
    marker = stack.index(BLOCKED_BY_ANOTHER)
    assert functions(stack[:marker]) == ["nap", "sleep"] and functions(stack[marker + 1 :]) == ["spinning", "spin"]


def test_a_deep_stack_is_cut_to_its_innermost_lines(env: LoopThread) -> None:
    async def deep(n: int) -> None:
        if n:
            return await deep(n - 1)
        await spinning(env.release, env.running)

    task = env.task(lambda: deep(50))
    assert env.running.wait(5)
    stack = env.where(task, blocked=True)
    assert len(stack) == STACK_LINES and functions(stack[-2:]) == ["spinning", "spin"]
    # The outermost lines too (an activity, the environment's method), and how many are left out between.
    assert functions(stack[:5]) == ["deep"] * 5 and stack[5] == "… 38 more"
    assert len(json.dumps(stack)) < 4096


def test_the_last_lines_written_are_kept_and_passed_on(monkeypatch) -> None:
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    tail = OutputTail().install()
    try:
        for i in range(7):
            print(f"line {i}")
        sys.stderr.write("a warning, in ")
        sys.stderr.write("two writes\n\n")
        print("x" * 1000)
        sys.stdout.write("no newline yet")
        tail.original("stdout").write("not kept\n")
    finally:
        tail.uninstall()
    assert sys.stdout is out and sys.stderr is err
    assert tail.lines() == ["line 4", "line 5", "line 6", "a warning, in two writes", "x" * (LINE_CHARS - 1) + "…"]
    assert out.getvalue().startswith("line 0\n") and out.getvalue().endswith("no newline yetnot kept\n")
    assert err.getvalue() == "a warning, in two writes\n\n"
