"""The activities a Clotho workflow drives an Atropos environment with, on one environment object per process.

Names and payloads (JSON objects, camelCase as Clotho's TypeScript workflows send them):

- ``atroposDescribe()`` → ``{className, name, mode, config, usesCheckpoint, maxNumWorkers}``
- ``atroposNextItem({cursor, checkpoint?, count?, store?})`` → ``{cursor, item, exhausted, fastForwarded, fastForwardSeconds, restoredFrom}``;
  with ``count``, also ``items``: up to ``count`` items from ``cursor`` on, fewer (and ``exhausted``) when the iterator ends
- ``atroposCollect({itemIndex, item, store?, postprocess?, maxTokenLen?})`` → a ``Collected`` (below); with
  ``postprocess: false`` → ``{status: "collected", groups, list, backlog, seconds}``, the groups as returned
- ``atroposPostprocess({itemIndex, item, groups, list, maxTokenLen?})`` → a ``Collected`` without ``backlog``
- ``atroposEvaluate({step?})`` → ``{result, metrics, logged, seconds}``: ``metrics`` the pairs ``evaluate`` appended to
  ``eval_metrics`` over what it gave ``evaluate_log`` (``logged``, null when it did not call it)
- ``atroposCheckpoint({step, cursor?, checkpoint?, store?})`` → ``{cursor, data, ref?, restoredFrom, fastForwarded}`` (``data`` null when the class saves nothing
  or ``ref`` holds it; with ``cursor``, the iterator is first brought to the run's cursor, from ``checkpoint`` when given)
- ``atroposMetrics({step})`` → ``{metrics}``: what ``wandb_log`` logs (and still logs to wandb when it is on)

Every activity runs on the environment's event loop and heartbeats from the worker's (``_heartbeating``) every
``heartbeat_interval`` with ``{seconds, stack?, lastOutput?}``: the seconds so far, where the environment's task is
(``file:line in function``, innermost last; down to the code that holds the loop when it is blocked) and the last
lines the process printed (``watch.py``); ``atroposNextItem`` adds ``fastForwarded``, the items skipped so far.

``Collected``: ``{status: "scored", groups: [ScoredDataGroup...], list, dropped: [{index, reason}], backlog: [item...], seconds}``
or ``{status: "declined", reason, dropped, backlog, seconds}``. Items travel encoded by ``codec.encode_item``; a
pickled item the run's workers did not sign fails the activity for good (``AtroposItemRefused``), never unpickled.
With ``store: {root, run, key?}`` in the input (a file-system trajectory store; ``run`` is ``<run>/<env>``, ``key`` the
group's ``<run>/<env>/item-<i>``), large items and every put-back item travel as ``{"$stored": key}`` and checkpoints as
``ref: {key}`` (``payloads.py``), and each kept group is written to ``<key>/attempt-<n>/group-<i>``, n the activity's
attempt: an attempt that timed out while its code ran on can never overwrite what a later attempt answered. The
result then has ``groupRefs: [{key}]`` and ``scores`` in place of ``groups``. Every answer is held to the payload
budget (``payloads.within_budget``).

An exception from the environment fails the activity with its type and Python traceback, so Temporal
retries it under the step's policy and, once attempts run out, fails the workflow with the traceback;
it is never turned into a dropped or scored group. ``None`` from ``collect_trajectories`` is ``declined``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import time
from typing import Any, Callable, Coroutine, Iterator, Optional, TypeVar

import wandb
from temporalio import activity
from temporalio.exceptions import ApplicationError

from .building import BuiltEnv
from .codec import ItemRefusedError, NotEncodableError, NotJsonError, decode_item, encode_item, group_to_json
from .cursor import Checkpoint, CursorBehindError, ItemCursor
from . import store
from .groups import filter_groups
from .loading import missing_module
from .payloads import Carrier, Target, uncarried, within_budget
from .watch import EnvLoop, OutputTail, where

T = TypeVar("T")

#: A loop that has not turned for this long is blocked: the heartbeat then shows the code that holds it.
BLOCKED_AFTER_S = 0.5

#: What an activity's body adds to its heartbeat's details (``fastForwarded``): a dict per activity, read by the beat.
_progress: contextvars.ContextVar[dict] = contextvars.ContextVar("clotho_atropos_progress")


def _on_env_loop(body: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., Coroutine[Any, Any, T]]:
    """Makes the coroutine method ``body`` an activity that runs on the environment's loop, heartbeating from this one."""

    @functools.wraps(body)
    async def activity_fn(self: "AtroposActivities", *args: Any) -> T:
        try:
            return await self._heartbeating(body(self, *args))
        except ItemRefusedError as error:
            # The same item would be refused again: the workflow fails now, naming why.
            raise ApplicationError(str(error), type="AtroposItemRefused", non_retryable=True) from None
        except ModuleNotFoundError as error:
            # Imported lazily by the environment: no retry adds it. The message says where (a run shows the innermost cause).
            raise ApplicationError(missing_module(error), type="AtroposModuleMissing", non_retryable=True) from None

    return activity_fn


ACTIVITY_NAMES = ("atroposDescribe", "atroposNextItem", "atroposCollect", "atroposPostprocess", "atroposEvaluate", "atroposCheckpoint", "atroposMetrics")


class AtroposActivities:
    """Holds the built environment; its bound ``@activity.defn`` methods are what a worker registers."""

    def __init__(
        self,
        built: BuiltEnv,
        heartbeat_interval: float = 2.0,
        env_loop: Optional[EnvLoop] = None,
        output: Optional[OutputTail] = None,
    ) -> None:
        self.built = built
        self.env = built.env
        self.cursor = ItemCursor(built.env)
        self.heartbeat_interval = heartbeat_interval
        #: Where the environment's code runs; None: the loop that calls the activity (tests).
        self.env_loop = env_loop
        self.output = output

    @property
    def activities(self) -> list:
        return [self.describe, self.next_item, self.collect, self.postprocess, self.evaluate, self.checkpoint, self.metrics]

    @activity.defn(name="atroposDescribe")
    @_on_env_loop
    async def describe(self, _raw: Any = None) -> dict:
        return self.description()

    def description(self) -> dict:
        """The environment as Atropos built it (``atroposDescribe``'s answer)."""
        env = self.env
        return {
            "className": type(env).__name__,
            "name": type(env).name,
            "mode": self.built.mode,
            "config": env.config.model_dump(mode="json"),
            "usesCheckpoint": self.cursor.keeps_checkpoints,
            "maxNumWorkers": env.max_num_workers,
        }

    @activity.defn(name="atroposNextItem")
    @_on_env_loop
    async def next_item(self, raw: Any) -> dict:
        request = _object(raw, "atroposNextItem")
        index = _int(request, "cursor")
        target = Target.parse(request.get("store"))
        checkpoint = Checkpoint.parse(request.get("checkpoint"), target.read if target else None)
        count = _int(request, "count") if "count" in request else None
        try:
            taken = await self.cursor.item_at(index, checkpoint, progress=_report_fast_forward)
            items = [] if taken.exhausted else [taken.item]
            exhausted = taken.exhausted
            # The items after it, in the same call: one round trip for the slots the workflow has free.
            while count is not None and len(items) < count and not exhausted:
                following = await self.cursor.item_at(index + len(items))
                exhausted = following.exhausted
                if not exhausted:
                    items.append(following.item)
        except CursorBehindError as error:
            raise ApplicationError(str(error), type="AtroposCursorBehind", non_retryable=True) from error
        carrier = Carrier(target)
        carried = [carrier.carry(_encoded(item, f"item {index + i} from get_next_item")) for i, item in enumerate(items)]
        answer = {
            "cursor": index,
            # The first of `items` again (the answer of a call without `count`): the same value, not carried twice.
            "item": carried[0] if carried else None,
            "exhausted": exhausted,
            "fastForwarded": taken.fast_forwarded,
            "fastForwardSeconds": taken.fast_forward_seconds,
            "restoredFrom": taken.restored_from,
        }
        return within_budget(answer if count is None else {**answer, "items": carried}, f"atroposNextItem's answer at cursor {index}")

    @activity.defn(name="atroposCollect")
    @_on_env_loop
    async def collect(self, raw: Any) -> dict:
        request = _object(raw, "atroposCollect")
        target = Target.parse(request.get("store"))
        item = decode_item(uncarried(request.get("item"), target))
        started = time.time()
        result = await self.env.collect_trajectories(item)
        if not (isinstance(result, tuple) and len(result) == 2):
            raise ApplicationError(f"collect_trajectories returned {type(result).__name__}, expected (groups, backlog)", type="AtroposBadReturn", non_retryable=True)
        groups, backlog = result
        # Put-back items wait in the env-run's progress, across continue-as-new: in the store, always.
        carrier = Carrier(target, always=True)
        backlog_json = [carrier.carry(_encoded(b, f"backlog item {i} of collect_trajectories")) for i, b in enumerate(backlog or [])]
        if groups is None or (hasattr(groups, "__len__") and len(groups) == 0):
            self._record(started, succeeded=False)
            declined = {"status": "declined", "reason": "declined", "dropped": [], "backlog": backlog_json, "seconds": time.time() - started}
            return within_budget(declined, "atroposCollect's answer")
        if not request.get("postprocess", True):
            # For a workflow that runs atroposPostprocess as a step of its own: the groups as they came.
            was_list = isinstance(groups, list)
            raw_groups = _groups_json(groups if was_list else [groups])
            collected = {"status": "collected", "groups": raw_groups, "list": was_list, "backlog": backlog_json, "seconds": time.time() - started}
            return within_budget(collected, "atroposCollect's answer")
        groups = await self.env.postprocess_histories(groups)
        collected = await self._scored(groups, item, request, started)
        collected["backlog"] = backlog_json
        return within_budget(collected, "atroposCollect's answer")

    @activity.defn(name="atroposPostprocess")
    @_on_env_loop
    async def postprocess(self, raw: Any) -> dict:
        request = _object(raw, "atroposPostprocess")
        item = decode_item(uncarried(request.get("item"), Target.parse(request.get("store"))))
        started = time.time()
        groups = request.get("groups")
        if not isinstance(groups, list) or not groups:
            raise ApplicationError("atroposPostprocess expects groups: a non-empty list", type="AtroposBadInput", non_retryable=True)
        # The shape collect_trajectories returned: a list of groups, or one group.
        groups = await self.env.postprocess_histories(groups if request.get("list", False) else groups[0])
        return within_budget(await self._scored(groups, item, request, started), "atroposPostprocess's answer")

    @activity.defn(name="atroposEvaluate")
    @_on_env_loop
    async def evaluate(self, raw: Any = None) -> dict:
        request = _object(raw or {}, "atroposEvaluate")
        if "step" in request:
            self.env.curr_step = _int(request, "step")
        buffered = getattr(self.env, "eval_metrics", None)
        before = len(buffered) if isinstance(buffered, list) else 0
        started = time.time()
        with _evaluate_log_kept(self.env) as logged:
            result = await self.env.evaluate()
        # Atropos's environments buffer (name, value) pairs in eval_metrics for their next wandb_log.
        after = getattr(self.env, "eval_metrics", None)
        new = after[before:] if isinstance(after, list) else []
        pairs = {str(pair[0]): pair[1] for pair in new if isinstance(pair, (tuple, list)) and len(pair) == 2}
        evaluated = {
            "result": _json_or_repr(result),
            "metrics": _json_or_repr({**logged, **pairs}),
            "logged": _json_or_repr(logged) if logged else None,
            "seconds": time.time() - started,
        }
        return within_budget(evaluated, "atroposEvaluate's answer")

    @activity.defn(name="atroposCheckpoint")
    @_on_env_loop
    async def checkpoint(self, raw: Any = None) -> dict:
        request = _object(raw or {}, "atroposCheckpoint")
        at = _int(request, "cursor") if "cursor" in request else None
        target = Target.parse(request.get("store"))
        restore = Checkpoint.parse(request.get("checkpoint"), target.read if target else None)
        saved, advanced = await self.cursor.checkpoint(int(request.get("step", 0)), at, restore)
        kept = saved.to_json()
        if target is not None and target.run is not None and saved.data is not None:
            # By content: it travels with every atroposNextItem, as a key.
            kept = {"cursor": saved.cursor, "data": None, "ref": store.put_content(target.root, f"{target.run}/checkpoints", saved.data)}
        answer = {**kept, "restoredFrom": advanced.restored_from, "fastForwarded": advanced.fast_forwarded}
        return within_budget(answer, f"atroposCheckpoint's answer at step {request.get('step', 0)}")

    @activity.defn(name="atroposMetrics")
    @_on_env_loop
    async def metrics(self, raw: Any = None) -> dict:
        request = _object(raw or {}, "atroposMetrics")
        if "step" in request:
            self.env.curr_step = _int(request, "step")
        logged: dict = {}
        real_log = wandb.log
        use_wandb = self.env.config.use_wandb

        def capture(data: dict, *args: Any, **kwargs: Any) -> None:
            logged.update(data)
            if use_wandb and wandb.run is not None:
                real_log(data, *args, **kwargs)

        # wandb_log only calls wandb.log with use_wandb; it is read before the first await.
        wandb.log = capture
        self.env.config.use_wandb = True
        try:
            await self.env.wandb_log({})
        finally:
            wandb.log = real_log
            self.env.config.use_wandb = use_wandb
        numbers = {k: v for k, v in logged.items() if isinstance(v, (int, float)) or hasattr(v, "item")}
        return within_budget({"metrics": _json_or_repr(numbers)}, "atroposMetrics's answer")

    async def _scored(self, groups: Any, item: Any, request: dict, started: float) -> dict:
        was_list = isinstance(groups, list)
        as_list = groups if was_list else [groups]
        if "maxTokenLen" in request:
            self.env.max_token_len = _int(request, "maxTokenLen")
        # Atropos's serve aborts on a sequence at or past the trainer's max_token_len; process does not.
        kept, dropped = await filter_groups(self.env, as_list, item, abort_on_length=self.built.mode == "serve")
        groups_json = _groups_json(kept)
        self._record(started, succeeded=bool(kept))
        seconds = time.time() - started
        if not kept:
            reason = dropped[0]["reason"] if dropped else "declined"
            return {"status": "declined", "reason": reason, "dropped": dropped, "seconds": seconds}
        scored = {"status": "scored", "list": was_list, "dropped": dropped, "seconds": seconds}
        target = Target.parse(request.get("store"))
        if target is not None and target.key is not None:
            # Into the trajectory store, one entry per group under this attempt's own prefix: another attempt of the
            # same collect still running (timed out, its code not yet stopped) writes beside it, never over it.
            prefix = f"{target.key}/attempt-{activity.info().attempt}"
            refs = [store.put(target.root, f"{prefix}/group-{i}", g) for i, g in enumerate(groups_json)]
            return {**scored, "groupRefs": refs, "scores": [g["scores"] for g in groups_json]}
        return {**scored, "groups": groups_json}

    def _record(self, started: float, succeeded: bool) -> None:
        """Atropos's timing stats (``handle_env``), which its ``wandb_log`` reports through ``perf_stats``."""
        duration = max(0.0, time.time() - started)
        self.env.task_duration.append(duration)
        self.env.task_successful.append(1 if succeeded else 0)
        (self.env.succeeded_task_duration if succeeded else self.env.failed_task_duration).append(duration)

    async def _heartbeating(self, work: Coroutine[Any, Any, T]) -> T:
        """Runs ``work`` on the environment's loop and awaits it on this one (the worker's), heartbeating meanwhile.

        The heartbeat comes from the worker's thread, so an environment that holds its loop (scoring inline for
        longer than the heartbeat timeout) keeps its attempt; a dead worker stops heartbeating and is noticed within the
        timeout, and a cancel arrives with the answer to a heartbeat (it reaches the environment's task when its loop
        next turns). ``work`` sees the activity's context (``activity.info()``) but must not heartbeat itself.
        """
        progress: dict = {}
        context = contextvars.copy_context()
        context.run(_progress.set, progress)
        held: dict = {}

        async def in_context() -> T:
            for var, value in context.items():
                var.set(value)
            held["task"] = asyncio.current_task()
            return await work

        loop = self.env_loop.loop if self.env_loop is not None else asyncio.get_running_loop()
        done = asyncio.wrap_future(asyncio.run_coroutine_threadsafe(in_context(), loop))
        started = time.monotonic()
        try:
            while True:
                finished, _ = await asyncio.wait({done}, timeout=self.heartbeat_interval)
                if finished:
                    return done.result()
                activity.heartbeat(self._details(started, work, held.get("task"), progress))
        except BaseException:
            done.cancel()
            raise

    def _details(self, started: float, work: Coroutine, task: Optional[asyncio.Task], progress: dict) -> dict:
        """``{seconds, stack, lastOutput}`` and what the body reported: where the environment is, a few KB at most."""
        blocked = self.env_loop is not None and self.env_loop.blocked_for() >= BLOCKED_AFTER_S
        details: dict = {"seconds": round(time.monotonic() - started, 1), **dict(progress)}
        stack = where(work, task, self.env_loop, blocked)
        if stack:
            details["stack"] = stack
        output = self.output.lines() if self.output is not None else []
        if output:
            details["lastOutput"] = output
        return details


def _report_fast_forward(skipped: int) -> None:
    """The items a fast-forward has skipped so far, for the next heartbeat."""
    _progress.get()["fastForwarded"] = skipped


@contextlib.contextmanager
def _evaluate_log_kept(env: Any) -> Iterator[dict]:
    """While active, the metrics ``env.evaluate_log`` is given are kept in the yielded dict (it still writes its files)."""
    logged: dict = {}
    own = vars(env).get("evaluate_log")
    original = env.evaluate_log

    async def keeping(metrics: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(metrics, dict):
            logged.update(metrics)
        return await original(metrics, *args, **kwargs)

    env.evaluate_log = keeping
    try:
        yield logged
    finally:
        if own is None:
            del env.evaluate_log
        else:
            env.evaluate_log = own


def _object(raw: Any, name: str) -> dict:
    if not isinstance(raw, dict):
        raise ApplicationError(f"{name} expects a JSON object, got {raw!r:.200}", type="AtroposBadInput", non_retryable=True)
    return raw


def _int(request: dict, key: str) -> int:
    value = request.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ApplicationError(f"{key}: expected an integer, got {value!r:.100}", type="AtroposBadInput", non_retryable=True)
    return value


def _encoded(item: Any, what: str) -> Any:
    try:
        return encode_item(item)
    except NotEncodableError as error:
        # The same item would fail again: a retry cannot help, so the run fails with the reason. Without a cause, since
        # the message holds pickle's and the innermost cause is what a failed run shows.
        raise ApplicationError(f"{what} cannot be encoded: {error}", type="AtroposItemNotEncodable", non_retryable=True) from None


def _groups_json(groups: list) -> list:
    try:
        return [group_to_json(g, f"group {i}") for i, g in enumerate(groups)]
    except NotJsonError as error:
        raise ApplicationError(str(error), type="AtroposGroupNotJson", non_retryable=True) from error


def _json_or_repr(value: Any) -> Any:
    try:
        return group_to_json(value, "value")
    except NotJsonError:
        return repr(value)


