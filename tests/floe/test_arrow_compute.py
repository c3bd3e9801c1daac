"""floe.arrow_compute calls Arrow's kernels by name: every function gives what
pyarrow.compute's gives for the same arguments (Python values as scalars, nulls, options),
and a safe cast refuses what pyarrow.compute's refuses."""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from floe import arrow_compute as fc

INTS = pa.array([3, None, -1, 7, 3], pa.int64())
OTHER = pa.array([1, 2, None, 7, 4], pa.int64())
BOOLS = pa.array([True, None, False, True, False])
MORE_BOOLS = pa.array([None, None, True, False, True])
FLOATS = pa.array([1.5, math.nan, None, -0.0, 2.0])
STRINGS = pa.array(["a\\b", None, 'q"x', "parquet", "é"])
BINARY = pa.array([b"\x01\x00\x00\x00", b"", None, b"\x02\x00\x00\x00", b"abcd"])

CASES: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("add", (INTS, OTHER), {}),
    ("add", (INTS, 5), {}),
    ("multiply", (INTS, 3), {}),
    ("and_", (BOOLS, MORE_BOOLS), {}),
    ("or_", (BOOLS, MORE_BOOLS), {}),
    ("and_kleene", (BOOLS, MORE_BOOLS), {}),
    ("or_kleene", (BOOLS, MORE_BOOLS), {}),
    ("invert", (BOOLS,), {}),
    ("any", (BOOLS,), {}),
    ("equal", (INTS, 3), {}),
    ("not_equal", (INTS, OTHER), {}),
    ("less", (INTS, OTHER), {}),
    ("less_equal", (INTS, 3), {}),
    ("greater", (FLOATS, 0.0), {}),
    ("greater_equal", (STRINGS, "b"), {}),
    ("if_else", (BOOLS, INTS, OTHER), {}),
    ("if_else", (BOOLS, 0, 2), {}),
    ("indices_nonzero", (BOOLS,), {}),
    ("is_nan", (FLOATS,), {}),
    ("is_null", (INTS,), {}),
    ("is_valid", (FLOATS,), {}),
    ("min", (INTS,), {}),
    ("max", (INTS,), {}),
    ("sum", (BOOLS,), {}),
    ("take", (STRINGS, pa.array([4, 0, 0, None])), {}),
    ("take", (pa.table({"a": INTS, "s": STRINGS}), [1, 3]), {}),
    ("filter", (INTS, BOOLS), {}),
    ("unique", (pa.chunked_array([INTS, OTHER]),), {}),
    ("utf8_upper", (STRINGS,), {}),
    ("binary_length", (BINARY,), {}),
    ("binary_join_element_wise", (STRINGS, "-", STRINGS, ""), {}),
    ("cast", (INTS, pa.string()), {}),
    ("cast", (BINARY.filter(pa.array([True, False, True, True, True])), pa.binary(4)), {}),
    ("fill_null", (INTS, 0), {}),
    ("fill_null", (STRINGS, "null"), {}),
    ("fill_null", (INTS, pa.scalar(9, pa.int32())), {}),
    ("is_in", (STRINGS,), {"value_set": pa.array(["parquet", "a\\b"])}),
    ("dictionary_encode", (INTS,), {}),
    ("dictionary_encode", (INTS,), {"null_encoding": "encode"}),
    ("match_substring_regex", (STRINGS, '[\\x00-\\x1f"\\\\]'), {}),
    ("replace_substring", (STRINGS, "\\", "\\\\"), {}),
]


@pytest.mark.parametrize("name, args, kwargs", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_function_gives_what_pyarrow_compute_gives(name: str, args: tuple[Any, ...],
                                                        kwargs: dict[str, Any]) -> None:
    got = getattr(fc, name)(*args, **kwargs)
    want = getattr(pc, name)(*args, **kwargs)
    assert type(got) is type(want)
    assert got.equals(want), (got, want)


def test_every_function_is_tested() -> None:
    assert set(fc.__all__) == {name for name, _, _ in CASES}


@pytest.mark.parametrize("values, to", [
    (pa.array([1, 2**40]), pa.int32()),
    (pa.array([1.5]), pa.int64()),
    (pa.array([b"\xff"]), pa.string()),
    (pa.array([b"abc"]), pa.binary(4)),
])
def test_a_safe_cast_refuses_what_pyarrow_refuses(values: pa.Array, to: pa.DataType) -> None:
    with pytest.raises(pa.ArrowInvalid):
        pc.cast(values, to)
    with pytest.raises(pa.ArrowInvalid):
        fc.cast(values, to)
