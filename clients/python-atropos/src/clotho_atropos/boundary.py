"""Holds what crosses between Clotho's TypeScript workflows and this worker to one schema, at the boundary.

``boundary.schema.json`` is generated from the zod schemas TypeScript derives its types from (src/schema/atropos.ts,
``npm run boundary-schemas``; a vitest test fails when the file is stale): for each activity, the JSON Schema of its
input and of its answer, and of the other messages the worker sends (``ready``, ``heartbeat``). The activities check
each input before their body runs and each answer before it leaves, so a field renamed on one side only fails the
first test that calls the activity, not a run. A bad input is the caller's mistake (``<prefix>BadInput``), a bad answer
or message this worker's bug (``<prefix>BadAnswer``); both fail for good, since a retry would send and answer the same.

Nothing here is Atropos's but its defaults: another worker could use it with its own file and prefix. Each
validator is compiled once, at its first use (fastjsonschema: compiling all of them takes about a second, which a
worker's start need not pay), then checks a collect's input in about 10 µs and its answer in about 0.2 ms (8 groups
of 16 scores); defaults in the schema are never filled in.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Callable, Optional

import fastjsonschema
from temporalio.exceptions import ApplicationError

#: The schema this package's activities are held to.
SCHEMA_PATH = Path(__file__).with_name("boundary.schema.json")


class Boundary:
    """The validators of one boundary schema document (``{source, activities: {name: {input, answer}}, messages}``)."""

    def __init__(self, document: dict, prefix: str = "Atropos") -> None:
        self.source = document.get("source", "the boundary schema")
        self.prefix = prefix
        self._activities = {name: (_Validator(pair["input"]), _Validator(pair["answer"])) for name, pair in document["activities"].items()}
        self._messages = {name: _Validator(schema) for name, schema in document["messages"].items()}

    @classmethod
    def load(cls, path: Path = SCHEMA_PATH, prefix: str = "Atropos") -> "Boundary":
        return cls(json.loads(Path(path).read_text()), prefix)

    def check_input(self, activity: str, value: Any) -> None:
        problem = self._activities[activity][0].problem(value)
        if problem is not None:
            raise ApplicationError(
                f"{activity}'s input does not hold to the boundary schema ({self.source}): {problem}", type=f"{self.prefix}BadInput", non_retryable=True
            )

    def check_answer(self, activity: str, value: Any) -> None:
        self._bug(self._activities[activity][1].problem(value), f"{activity}'s answer")

    def check_message(self, name: str, value: Any) -> None:
        self._bug(self._messages[name].problem(value), f"the worker's {name}")

    def _bug(self, problem: Optional[str], what: str) -> None:
        if problem is not None:
            raise ApplicationError(
                f"{what} does not hold to the boundary schema ({self.source}), a bug of this worker: {problem}",
                type=f"{self.prefix}BadAnswer",
                non_retryable=True,
            )


class _Validator:
    """One schema, compiled on its first use (a worker starts without compiling what it never checks); a union's
    branches compiled apart on its first failure, so that a problem names a field of the branch meant."""

    def __init__(self, schema: dict) -> None:
        self._schema = schema

    @functools.cached_property
    def _whole(self) -> Callable[[Any], Any]:
        return _compiled(self._schema)

    @functools.cached_property
    def _branches(self) -> list[tuple[dict, Callable[[Any], Any]]]:
        branches = _branches(self._schema)
        return [(_constants(branch), _compiled(branch)) for branch in branches] if len(branches) > 1 else []

    def problem(self, value: Any) -> Optional[str]:
        """None when ``value`` holds to the schema; else what is wrong, by field path."""
        try:
            self._whole(value)
            return None
        except fastjsonschema.JsonSchemaValueException as error:
            if not self._branches:
                return _described(error)
        # A union (an answer's kinds, told apart by `status`): the problems of the branches the value says it is.
        meant = [check for constants, check in self._branches if _has(value, constants)]
        keys = sorted({key for constants, _ in self._branches for key in constants})
        if not meant and keys:
            return "; ".join(f"{key} is {_field(value, key)!r}, not one of {sorted({c[key] for c, _ in self._branches if key in c})}" for key in keys)
        problems = []
        for check in meant or [check for _, check in self._branches]:
            try:
                check(value)
            except fastjsonschema.JsonSchemaValueException as error:
                problems.append(_described(error))
        return " or ".join(problems)


def _compiled(schema: dict) -> Callable[[Any], Any]:
    return fastjsonschema.compile(schema, use_default=False)


def _branches(schema: dict) -> list[dict]:
    """The alternatives of a union, nested unions flattened; the schema itself when it is none."""
    alternatives = schema.get("oneOf") or schema.get("anyOf")
    if not alternatives:
        return [schema]
    return [leaf for branch in alternatives for leaf in _branches(branch)]


def _constants(branch: dict) -> dict:
    """The fields a branch fixes (``status: "scored"``): what tells a union's branches apart."""
    return {key: spec["const"] for key, spec in branch.get("properties", {}).items() if isinstance(spec, dict) and "const" in spec}


def _has(value: Any, constants: dict) -> bool:
    return bool(constants) and isinstance(value, dict) and all(value.get(key) == constant for key, constant in constants.items())


def _field(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else value


def _described(error: fastjsonschema.JsonSchemaValueException) -> str:
    """fastjsonschema's message with the value's path (``store.run``) for its ``data.store.run``."""
    path = error.name[len("data") :].lstrip(".") if error.name.startswith("data") else error.name
    rest = error.message[len(error.name) :].strip() if error.message.startswith(error.name) else error.message
    return f"{path or 'the value'} {rest}"
