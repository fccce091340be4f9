import base64
import json
import pickle
from dataclasses import dataclass

import numpy as np
import pytest

from clotho_atropos.codec import ItemRefusedError, NotEncodableError, NotJsonError, decode_item, encode_item, group_to_json, set_item_key


@dataclass
class Row:
    question: str
    answer: int


def roundtrip(value):
    return decode_item(json.loads(json.dumps(encode_item(value), allow_nan=False)))


def test_items_come_back_with_their_types() -> None:
    # The item shapes Atropos's environments use: tuples of frozensets of message items, dicts, lists.
    message = frozenset({"role": "user", "content": "What is 2 + 2?"}.items())
    item = ((message,), "4", {"ids": [1, 2], 3: {"x"}, "raw": b"\x00\xff"}, [1.5, None, True])
    back = roundtrip(item)
    assert back == item
    assert type(back) is tuple and type(back[0][0]) is frozenset and type(back[2]["ids"]) is list


def test_plain_json_stays_plain_and_tags_do_not_collide() -> None:
    assert encode_item({"question": "q", "answer": [1, 2]}) == {"question": "q", "answer": [1, 2]}
    tricky = {"$tuple": [1, 2]}
    assert roundtrip(tricky) == tricky and type(roundtrip(tricky)) is dict


def test_numpy_and_objects() -> None:
    array = np.arange(6, dtype=np.int32).reshape(2, 3)
    back = roundtrip({"a": array})["a"]
    assert back.dtype == np.int32 and (back == array).all()
    assert roundtrip(Row("q", 4)) == Row("q", 4)  # by pickle: the run's own classes
    assert roundtrip(float("nan")) != roundtrip(float("nan"))  # NaN, carried (by pickle)


def test_groups_become_atropos_json() -> None:
    group = {"tokens": [np.array([1, 2, 3])], "masks": [[-100, 2, 3]], "scores": [np.float64(0.5)], "messages": [({"role": "user", "content": "x"},)]}
    out = group_to_json(group)
    assert out == {"tokens": [[1, 2, 3]], "masks": [[-100, 2, 3]], "scores": [0.5], "messages": [[{"role": "user", "content": "x"}]]}
    json.dumps(out, allow_nan=False)


def test_what_json_cannot_carry_is_named() -> None:
    with pytest.raises(NotJsonError, match=r"group.scores\[1\] is nan"):
        group_to_json({"scores": [1.0, float("nan")]})
    with pytest.raises(NotJsonError, match=r"group.images\[0\] is a Row"):
        group_to_json({"images": [Row("q", 1)]})


class Alarm:
    """Unpickling it raises: a test fails if it is ever unpickled."""

    def __reduce__(self):
        return (exec, ("raise SystemExit('unpickled')",))


def test_pickled_items_are_signed_and_only_signed_ones_are_read() -> None:
    encoded = encode_item(Row("q", 4))
    assert set(encoded["$pickle"]) == {"data", "hmac"} and decode_item(encoded) == Row("q", 4)
    forged = base64.b64encode(pickle.dumps(Alarm())).decode("ascii")
    with pytest.raises(ItemRefusedError, match="has no signature"):
        decode_item({"$pickle": forged})
    with pytest.raises(ItemRefusedError, match="does not match the run's key"):
        decode_item({"$pickle": {"data": forged, "hmac": encoded["$pickle"]["hmac"]}})
    # Another run's key signs another signature.
    set_item_key(b"another run's key")
    with pytest.raises(ItemRefusedError, match="does not match the run's key"):
        decode_item(encoded)


def test_without_a_key_no_pickle_is_written_or_read() -> None:
    encoded = encode_item(Row("q", 4))
    set_item_key(None)
    with pytest.raises(ItemRefusedError, match="no item key"):
        decode_item(encoded)
    with pytest.raises(NotEncodableError, match=r"item\[0\] is a Row, which only pickle can carry, and this worker has no item key"):
        encode_item([Row("q", 4)])
    assert roundtrip(("plain", {"json": [1]})) == ("plain", {"json": [1]})  # the rest needs none
