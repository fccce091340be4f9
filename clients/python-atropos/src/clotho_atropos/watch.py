"""Where the environment's code is, for the heartbeat of an activity that runs long: its stack and its last output.

The environment runs on its own event loop (the main thread's, ``EnvLoop``), the Temporal worker on another thread,
so a heartbeat can look at the environment's task while its loop is blocked: ``where`` gives the task's coroutine
stack and, when the loop has not turned for a while, the thread's stack, whose innermost frame is the code that
holds the loop. ``OutputTail`` keeps the last lines the process wrote to ``sys.stdout`` and ``sys.stderr``.
Both are small (``STACK_LINES`` and ``OUTPUT_LINES`` lines of at most ``LINE_CHARS``), since they travel in
every heartbeat.
"""

from __future__ import annotations

import asyncio
import collections
import os
import sys
import threading
import time
from types import FrameType
from typing import Any, Iterable, Optional, TextIO

STACK_LINES = 16
OUTPUT_LINES = 5
LINE_CHARS = 200
#: Where a task's own stack ends and the stack of another task that holds the loop begins.
BLOCKED_BY_ANOTHER = "(the event loop is held by another task:)"
_ASYNCIO = os.path.dirname(asyncio.__file__) + os.sep


class EnvLoop:
    """The environment's event loop and its thread, and whether the loop is turning (``blocked_for``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, thread_id: int) -> None:
        self.loop = loop
        self.thread_id = thread_id
        self._probe_sent: Optional[float] = None

    @staticmethod
    def current() -> "EnvLoop":
        return EnvLoop(asyncio.get_running_loop(), threading.get_ident())

    def blocked_for(self) -> float:
        """Seconds the loop has not answered a probe sent at an earlier call (0 when it answered); sends the next.

        From another thread. A probe is a callback the loop runs on its next turn, so a blocked loop leaves it waiting.
        """
        now = time.monotonic()
        sent = self._probe_sent
        if sent is not None:
            return now - sent
        self._probe_sent = now
        self.loop.call_soon_threadsafe(self._answered)
        return 0.0

    def _answered(self) -> None:
        self._probe_sent = None


def where(coro: Any, task: Optional[asyncio.Task], env_loop: Optional[EnvLoop], blocked: bool) -> list[str]:
    """``file:line in function`` lines, innermost last: where ``coro`` (run by ``task``) is, down to the code that holds
    the loop when ``blocked`` (the thread's frames from ``coro``'s on, or the other task's after ``BLOCKED_BY_ANOTHER``)."""
    own = _awaiting(coro)
    if not blocked or env_loop is None:
        return _lines(own, STACK_LINES)
    thread = _outermost_first(sys._current_frames().get(env_loop.thread_id))
    running = asyncio.current_task(env_loop.loop)
    entry = coro.cr_frame if running is task and task is not None else _task_frame(running)
    below = thread[thread.index(entry):] if entry is not None and entry in thread else [f for f in thread if not _internal(f)]
    if running is task and task is not None:
        return _lines(below, STACK_LINES)
    return _lines(own, STACK_LINES // 2) + [BLOCKED_BY_ANOTHER] + _lines(below, STACK_LINES // 2 - 1)


def _task_frame(task: Optional[asyncio.Task]) -> Optional[FrameType]:
    return getattr(task.get_coro(), "cr_frame", None) if task is not None else None


def _awaiting(coro: Any) -> list[FrameType]:
    """The frames of ``coro`` and of what it awaits, down the chain (``Task.get_stack`` gives the outermost only)."""
    frames = []
    while coro is not None:
        if isinstance(coro, asyncio.Task):
            coro = coro.get_coro()
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None) or getattr(coro, "ag_frame", None)
        if frame is None:
            break
        frames.append(frame)
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None) or getattr(coro, "ag_await", None)
    return frames


def _outermost_first(frame: Optional[FrameType]) -> list[FrameType]:
    frames = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    return frames[::-1]


def _internal(frame: FrameType) -> bool:
    """asyncio's own frames (the loop turning) and this package's, which say nothing about the environment."""
    path = frame.f_code.co_filename
    return path.startswith(_ASYNCIO) or os.path.dirname(path) == os.path.dirname(__file__)


def _lines(frames: Iterable[FrameType], budget: int) -> list[str]:
    """At most ``budget`` lines: all of them, or the outermost third (the activity, the environment's method), a line
    saying how many are left out, and the innermost rest (where it is)."""
    lines = [_clip(f"{_short(f.f_code.co_filename)}:{f.f_lineno} in {f.f_code.co_name}") for f in frames]
    if len(lines) <= budget:
        return lines
    head = budget // 3
    tail = budget - head - 1
    return lines[:head] + [f"… {len(lines) - head - tail} more"] + lines[-tail:]


def _short(path: str) -> str:
    """The path as it is imported: relative to the longest ``sys.path`` entry it lies under, else the file's name."""
    best = ""
    for entry in sys.path:
        folder = os.path.join(os.path.abspath(entry or "."), "")
        if path.startswith(folder) and len(folder) > len(best):
            best = folder
    return path[len(best):] if best else os.path.basename(path)


def _clip(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


class OutputTail:
    """Keeps the last lines written to ``sys.stdout`` and ``sys.stderr`` while installed, passing everything on.

    Lock-free (a deque): an environment may fork a process pool while another thread writes, and a lock held at the
    fork would stay held in the child.
    """

    def __init__(self, keep: int = OUTPUT_LINES) -> None:
        self._lines: "collections.deque[str]" = collections.deque(maxlen=keep)
        self._streams: list[tuple[str, TextIO]] = []

    def lines(self) -> list[str]:
        return list(self._lines)

    def original(self, name: str) -> TextIO:
        """The stream ``sys.<name>`` was before ``install``, which writes without keeping."""
        return dict(self._streams).get(name) or getattr(sys, name)

    def install(self) -> "OutputTail":
        for name in ("stdout", "stderr"):
            original = getattr(sys, name)
            self._streams.append((name, original))
            setattr(sys, name, _Tee(original, self._lines))
        return self

    def uninstall(self) -> None:
        for name, original in reversed(self._streams):
            setattr(sys, name, original)
        self._streams.clear()


class _Tee:
    """A text stream that writes through to ``stream`` and keeps each complete, non-empty line it saw."""

    def __init__(self, stream: TextIO, lines: "collections.deque[str]") -> None:
        self._stream = stream
        self._lines = lines
        self._partial = ""

    def write(self, text: str) -> int:
        written = self._stream.write(text)
        *complete, self._partial = (self._partial + text).split("\n")
        for line in complete:
            if line.strip():
                self._lines.append(_clip(line.rstrip()))
        self._partial = self._partial[: LINE_CHARS + 1]  # the start of a long line, clipped once it ends
        return written

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
