"""floe.arrow_compute calls Arrow's kernels by name: every function gives what
pyarrow.compute's gives for the same arguments (Python values as scalars, nulls, options),
and a safe cast refuses what pyarrow.compute's refuses."""

from __future__ import annotations

import datetime as dt
import math
import subprocess
import sys
from decimal import Decimal
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
    ("if_else", (BOOLS, None, 2.5), {}),
    ("equal", (BOOLS, True), {}),
    ("equal", (BINARY, b""), {}),
    ("add", (INTS, 2**63 + 5), {}),
    ("add", (pa.array([1], pa.uint64()), 2**63 + 5), {}),
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
    ("replace_substring", (STRINGS, "\\", "\\\\"), {}),
]


@pytest.mark.parametrize("name, args, kwargs", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_function_gives_what_pyarrow_compute_gives(name: str, args: tuple[Any, ...],
                                                        kwargs: dict[str, Any]) -> None:
    try:
        want = getattr(pc, name)(*args, **kwargs)
    except (TypeError, pa.ArrowException) as e:
        with pytest.raises(type(e)):
            getattr(fc, name)(*args, **kwargs)
        return
    got = getattr(fc, name)(*args, **kwargs)
    assert type(got) is type(want)
    assert got.equals(want), (got, want)


def test_every_function_is_tested() -> None:
    assert set(fc.__all__) - {"as_scalar"} == {name for name, _, _ in CASES}


@pytest.mark.parametrize("value", [0, -(2**63), 2**63 - 1, 2**63, -(2**63) - 1, True, 1.5,
                                   "é", b"\x00", None, dt.datetime(2024, 5, 1, 9, 15),
                                   dt.date(2024, 5, 1), Decimal("1.25")])
def test_as_scalar_is_the_scalar_pyarrow_infers(value: Any) -> None:
    try:
        want = pa.scalar(value)
    except (pa.ArrowInvalid, OverflowError) as e:
        with pytest.raises(type(e)):
            fc.as_scalar(value)
        return
    got = fc.as_scalar(value)
    assert got.type == want.type and got.equals(want)


def test_plain_values_are_typed_without_loading_dateutil() -> None:
    """Arrow's type inference imports dateutil (about 10 ms a process); these calls do not."""
    code = ("import sys, pyarrow as pa\n"
            "from floe import arrow_compute as fc\n"
            "a = pa.array([1, 2], pa.int64())\n"
            "fc.equal(a, 1); fc.if_else(fc.equal(a, 1), 'x', None); fc.take(a, [1, 0])\n"
            "fc.as_scalar(b'x'); fc.greater(pa.array([1.0], pa.float64()), 0.5)\n"
            "print('dateutil' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


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
