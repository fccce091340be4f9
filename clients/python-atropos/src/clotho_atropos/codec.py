"""JSON for what crosses Temporal: items (round-tripped exactly) and scored groups (Atropos's wire JSON).

An item from ``get_next_item`` is recorded by the workflow and handed back to ``collect_trajectories``,
possibly in another process, so it must come back as the same Python value. Atropos's environments
return dicts, tuples of frozensets of message items, numpy values... ``encode_item`` writes plain JSON
for JSON values and tags the rest (``{"$tuple": [...]}``, ``{"$frozenset": ...}``, ``{"$set": ...}``,
``{"$bytes": base64}``, ``{"$dict": [[k, v], ...]}`` for non-string keys, ``{"$ndarray": ...}``), and
``{"$pickle": {"data": base64, "hmac": hex}}`` for anything else (a dataclass, a pydantic model): the run's own code
reads it back. What standard pickle refuses (reasoning_gym's items carry dataset objects holding lambdas) is pickled
by value with cloudpickle, which plain ``pickle.loads`` reads; a value neither can write (a lock) is a
``NotEncodableError``.

Unpickling runs code, and an item comes from the workflow's history, which anyone who can start a workflow on the
server can write. So a pickle carries an HMAC-SHA256 of its bytes under the run's key (``set_item_key``: a secret
kept outside Temporal, in a file of the run's store folder that every worker of the run reads), and ``decode_item``
unpickles only one whose signature matches: an unsigned or badly signed pickle is an ``ItemRefusedError``.

A scored group is what Atropos would ``json.dumps`` to its API, so ``group_to_json`` is lossy the same
way (tuples become lists) and stricter: numpy values become numbers, and a value JSON cannot carry
(NaN, infinity, an object) is an error naming where it is, never a silently different group.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import pickle
from enum import Enum
from typing import Any, Optional

import cloudpickle

try:  # numpy comes with atroposlib; keep the codec importable without it
    import numpy as np
except ImportError:  # pragma: no cover
    np = None  # type: ignore[assignment]

_TAGS = ("$tuple", "$frozenset", "$set", "$bytes", "$dict", "$ndarray", "$pickle")


class NotJsonError(TypeError):
    """A scored group holds a value Atropos's API could not take as JSON."""


class NotEncodableError(TypeError):
    """An item holds a value neither pickle nor cloudpickle can write (a lock, an open file), or no key signs it."""


class ItemRefusedError(ValueError):
    """A pickled item this run's workers did not sign: unpickling it could run anyone's code."""


#: The run's key for signing pickled items (``set_item_key``); None: no pickle is written or read.
_item_key: Optional[bytes] = None


def set_item_key(key: Optional[bytes]) -> None:
    """Sets this process's key for signing and checking pickled items (the worker reads it from the run's key file)."""
    global _item_key
    _item_key = key


def read_item_key(path: str) -> bytes:
    """The key in the file at ``path`` (its text, stripped), which the first command of the run made."""
    with open(path, "rb") as f:
        key = f.read().strip()
    if not key:
        raise ValueError(f"{path}: the item key file is empty")
    return key


def encode_item(value: Any, where: str = "item") -> Any:
    """A JSON-safe form of ``value`` that ``decode_item`` turns back into an equal value of the same types."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) and type(value) is int:
        return value
    if isinstance(value, float) and type(value) is float:
        return value if math.isfinite(value) else {"$pickle": _pickled(value, where)}
    if isinstance(value, list) and type(value) is list:
        return [encode_item(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, tuple) and type(value) is tuple:
        return {"$tuple": [encode_item(v, f"{where}[{i}]") for i, v in enumerate(value)]}
    if type(value) is frozenset:
        return {"$frozenset": [encode_item(v, f"{where}[{i}]") for i, v in enumerate(value)]}
    if type(value) is set:
        return {"$set": [encode_item(v, f"{where}[{i}]") for i, v in enumerate(value)]}
    if type(value) is bytes:
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if type(value) is dict:
        if all(isinstance(k, str) for k in value) and not (len(value) == 1 and next(iter(value)) in _TAGS):
            return {k: encode_item(v, f"{where}.{k}") for k, v in value.items()}
        return {"$dict": [[encode_item(k, f"{where} key"), encode_item(v, f"{where}[{k!r}]")] for k, v in value.items()]}
    if np is not None and isinstance(value, np.ndarray) and value.dtype != object:
        return {"$ndarray": {"dtype": value.dtype.str, "shape": list(value.shape), "data": base64.b64encode(value.tobytes()).decode("ascii")}}
    return {"$pickle": _pickled(value, where)}


def decode_item(value: Any) -> Any:
    """The inverse of ``encode_item``."""
    if isinstance(value, list):
        return [decode_item(v) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        tag, inner = next(iter(value.items()))
        if tag == "$tuple":
            return tuple(decode_item(v) for v in inner)
        if tag == "$frozenset":
            return frozenset(decode_item(v) for v in inner)
        if tag == "$set":
            return {decode_item(v) for v in inner}
        if tag == "$bytes":
            return base64.b64decode(inner)
        if tag == "$dict":
            return {decode_item(k): decode_item(v) for k, v in inner}
        if tag == "$ndarray":
            assert np is not None
            return np.frombuffer(base64.b64decode(inner["data"]), dtype=np.dtype(inner["dtype"])).reshape(inner["shape"]).copy()
        if tag == "$pickle":
            return pickle.loads(_verified(inner))
    return {k: decode_item(v) for k, v in value.items()}


def _verified(signed: Any) -> bytes:
    """The pickle's bytes, once its HMAC under the run's key matches; never unpickled otherwise."""
    if not (isinstance(signed, dict) and isinstance(signed.get("data"), str) and isinstance(signed.get("hmac"), str)):
        raise ItemRefusedError("a pickled item ($pickle) has no signature: refused, since unpickling it could run any code; "
                               "this run's workers sign the items they pickle")
    if _item_key is None:
        raise ItemRefusedError("a pickled item ($pickle) cannot be checked: this worker has no item key (--item-key-file)")
    try:
        data = base64.b64decode(signed["data"], validate=True)
    except ValueError as error:
        raise ItemRefusedError(f"a pickled item ($pickle) whose data is not base64: {error}") from None
    if not hmac.compare_digest(_signature(data), signed["hmac"]):
        raise ItemRefusedError("a pickled item ($pickle) whose signature does not match the run's key: refused, since "
                               "unpickling it could run any code (a worker of another run, or an item made by hand)")
    return data


def _signature(data: bytes) -> str:
    assert _item_key is not None
    return hmac.new(_item_key, data, hashlib.sha256).hexdigest()


def _pickled(value: Any, where: str) -> dict:
    if _item_key is None:
        raise NotEncodableError(f"{where} is a {type(value).__name__}, which only pickle can carry, and this worker has no item key "
                                "to sign it with (--item-key-file)")
    try:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError):
        # Local functions and classes: by value. Kept as the fallback so what pickle writes stays byte for byte the same.
        try:
            data = cloudpickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, AttributeError, TypeError) as error:
            raise NotEncodableError(f"{where} is a {type(value).__name__}, which neither pickle nor cloudpickle can write: {error}") from error
    return {"data": base64.b64encode(data).decode("ascii"), "hmac": _signature(data)}


def group_to_json(group: Any, where: str = "group") -> Any:
    """Atropos's JSON of a scored group (or any value in one); raises ``NotJsonError`` naming the path."""
    if group is None or isinstance(group, (bool, str)):
        return group
    if isinstance(group, int):
        return int(group)
    if isinstance(group, float):
        if not math.isfinite(group):
            raise NotJsonError(f"{where} is {group}, which JSON cannot carry")
        return float(group)
    if isinstance(group, dict):
        return {str(k): group_to_json(v, f"{where}.{k}") for k, v in group.items()}
    if isinstance(group, (list, tuple)):
        return [group_to_json(v, f"{where}[{i}]") for i, v in enumerate(group)]
    if np is not None and isinstance(group, np.ndarray):
        return group_to_json(group.tolist(), where)
    if np is not None and isinstance(group, np.generic):
        return group_to_json(group.item(), where)
    if isinstance(group, Enum):
        return group_to_json(group.value, where)
    if hasattr(group, "model_dump"):  # pydantic models (openai's message objects)
        return group_to_json(group.model_dump(mode="json"), where)
    raise NotJsonError(f"{where} is a {type(group).__name__}, which Atropos's API cannot take as JSON")
