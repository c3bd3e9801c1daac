"""The Arrow compute functions planning uses, called by name through Arrow's function registry.

``import pyarrow.compute`` builds a documented Python wrapper for each of Arrow's ~300
functions: about 45 ms per process, more than a point plan's own work, for a dozen functions
(and ``Array.take``/``filter``/``cast``/``dictionary_encode`` import it on first use). The
functions here call the same kernels the same way those wrappers do
(``pyarrow._compute.call_function``: arguments packed alike, Python values becoming Arrow
scalars, the wrappers' default options), so results are identical; a test runs the planning
path and checks ``pyarrow.compute`` stays unimported. Everything else in floe (reading data,
writing Parquet) uses ``pyarrow.compute`` itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
from pyarrow import _compute as _c

__all__ = [
    "add", "and_", "and_kleene", "any", "as_scalar", "binary_join_element_wise",
    "binary_length", "cast", "dictionary_encode", "equal", "fill_null", "filter", "greater",
    "greater_equal", "if_else", "indices_nonzero", "invert", "is_in", "is_nan", "is_null",
    "is_valid", "less", "less_equal", "max", "min", "multiply", "not_equal", "or_",
    "or_kleene", "replace_substring", "sum", "take", "unique", "utf8_upper",
]


#: The Arrow type Arrow infers for a plain Python value, by the value's exact type.
_INFERRED = {bool: pa.bool_(), int: pa.int64(), float: pa.float64(), str: pa.string(),
             bytes: pa.binary(), type(None): pa.null()}


def _arg(value: Any) -> Any:
    """A plain Python value as the Arrow scalar Arrow's inference would make of it, typed
    here: inferring a type loads ``dateutil`` (to recognise ``relativedelta``), about 10 ms a
    process. Anything else (an Arrow value, a big int) is passed on unchanged."""
    arrow_type = _INFERRED.get(type(value))
    if arrow_type is None:
        return value
    if type(value) is int and not -(1 << 63) <= value < (1 << 63):
        return value  # Arrow infers uint64 or refuses: left to it
    return pa.scalar(value, arrow_type)


def as_scalar(value: Any) -> pa.Scalar:
    """``pyarrow.scalar(value)``: the same scalar, typed here for plain Python values."""
    got = _arg(value)
    return got if isinstance(got, pa.Scalar) else pa.scalar(value)


def _function(name: str) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        return _c.call_function(name, [_arg(a) for a in args])

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"Arrow's ``{name}`` (``pyarrow.compute.{name}`` with default options)."
    return call


add = _function("add")
and_ = _function("and")
and_kleene = _function("and_kleene")
any = _function("any")  # noqa: A001 - the name Arrow and pyarrow.compute give it
binary_join_element_wise = _function("binary_join_element_wise")
binary_length = _function("binary_length")
equal = _function("equal")
greater = _function("greater")
greater_equal = _function("greater_equal")
if_else = _function("if_else")
indices_nonzero = _function("indices_nonzero")
invert = _function("invert")
is_nan = _function("is_nan")
is_null = _function("is_null")
is_valid = _function("is_valid")
less = _function("less")
less_equal = _function("less_equal")
max = _function("max")  # noqa: A001
min = _function("min")  # noqa: A001
multiply = _function("multiply")
not_equal = _function("not_equal")
or_ = _function("or")
or_kleene = _function("or_kleene")
sum = _function("sum")  # noqa: A001
filter = _function("filter")  # noqa: A001
unique = _function("unique")
utf8_upper = _function("utf8_upper")


def cast(values: Any, target_type: pa.DataType) -> Any:
    """A safe cast (out of range or truncating raises ``ArrowInvalid``), as ``Array.cast``."""
    return _c.call_function("cast", [values], _c.CastOptions.safe(target_type))


def fill_null(values: Any, fill_value: Any) -> Any:
    """Nulls replaced by ``fill_value`` (a Python value becomes a scalar of the values' type),
    as ``pyarrow.compute.fill_null``."""
    if not isinstance(fill_value, (pa.Array, pa.ChunkedArray, pa.Scalar)):
        fill_value = pa.scalar(fill_value, type=values.type)
    elif values.type != fill_value.type:
        fill_value = pa.scalar(fill_value.as_py(), type=values.type)
    return _c.call_function("coalesce", [values, fill_value])


def take(values: Any, indices: Any) -> Any:
    """The rows at ``indices``; a Python sequence of indices becomes an int64 array here (the
    type Arrow would infer, without inferring it)."""
    if not isinstance(indices, (pa.Array, pa.ChunkedArray)):
        indices = pa.array(indices, pa.int64())
    return _c.call_function("take", [values, indices])


def is_in(values: Any, value_set: pa.Array) -> Any:
    return _c.call_function("is_in", [values], _c.SetLookupOptions(value_set))


def dictionary_encode(values: Any, null_encoding: str = "mask") -> Any:
    return _c.call_function("dictionary_encode", [values],
                            _c.DictionaryEncodeOptions(null_encoding))


def replace_substring(strings: Any, pattern: str, replacement: str) -> Any:
    return _c.call_function("replace_substring", [strings],
                            _c.ReplaceSubstringOptions(pattern, replacement))
