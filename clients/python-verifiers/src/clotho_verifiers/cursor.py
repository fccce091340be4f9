"""The run's tasks, in the order of the taskset's view (``env.taskset.select(config.select)``, as ``vf-eval`` takes them).

A task travels as its wire data (``task.data.model_dump(mode="json")``), which the env-run keeps in its history, and
an episode rebuilds the task from it as verifiers' env server does (``_build_task``): the worker that runs an episode
never needs the taskset to be read to that point. The cursor is the env-run's (its progress); this iterator only
serves it. A request at another position than the iterator's (a restarted worker, another worker's cursor) rebuilds
the view and skips to it.
"""

from __future__ import annotations

from typing import Any, Iterator


class TaskCursor:
    """A live iterator over the run's view of the taskset, with its position."""

    def __init__(self, env: Any, select: Any) -> None:
        self._env = env
        self._select = select
        data_cls = type(env.taskset).task_type().data_type()
        excluded = [name for name, info in data_cls.model_fields.items() if info.exclude]
        if excluded:
            # A field left out of the wire data would come back defaulted in every episode.
            raise ValueError(f"{data_cls.__name__} excludes {excluded} from serialization: a task must travel whole (drop exclude=True)")
        self._data_cls = data_cls
        self._task_cls = type(env.taskset).task_type()
        self._iterator: Iterator[Any] | None = None
        self._position = 0
        self._size: int | None = None

    def view(self) -> Any:
        return self._env.taskset.select(self._select)

    def take(self, position: int, count: int, cycle: bool = False) -> tuple[list[dict], bool]:
        """The wire data of up to ``count`` tasks from ``position`` on, and whether the view has none after them.

        With ``cycle`` (``serve``), position p of a bounded view of n tasks is its task p mod n, epoch after epoch:
        the answer is never exhausted.
        """
        if not cycle or not self.view().bounded:
            return self._take(position, count)
        if self._size is None:
            self._size = sum(1 for _ in self.view())
        if self._size == 0:
            raise ValueError("the run's view of the taskset has no task to serve")
        tasks: list[dict] = []
        while len(tasks) < count:
            at = (position + len(tasks)) % self._size
            taken, _ = self._take(at, min(count - len(tasks), self._size - at))
            tasks += taken
        return tasks, False

    def _take(self, position: int, count: int) -> tuple[list[dict], bool]:
        if self._iterator is None or self._position != position:
            self._iterator = iter(self.view())
            self._position = 0
            for _ in range(position):
                if next(self._iterator, None) is None:
                    return [], True
                self._position += 1
        tasks: list[dict] = []
        while len(tasks) < count:
            task = next(self._iterator, None)
            if task is None:
                return tasks, True
            self._position += 1
            tasks.append(task.data.model_dump(mode="json"))
        return tasks, False

    def task(self, data: dict) -> Any:
        """The task of its wire data, as the taskset's ``load()`` builds it."""
        return self._task_cls(self._data_cls.model_validate(data), self._env.config.taskset.task)
