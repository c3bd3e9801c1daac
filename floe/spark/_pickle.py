"""Pickling floe's immutable values for Spark (which ships readers, writers, tasks and plans
between processes with cloudpickle).

Classes that forbid ``__setattr__`` (schemas, struct / decimal / fixed types, partition specs,
sort orders, expressions and literals) cannot be rebuilt by pickle's default protocol, which
sets slot attributes with ``setattr`` after creating the object. :func:`register` tells
:mod:`copyreg` (whose table cloudpickle consults) to rebuild each one attribute by attribute
with ``object.__setattr__``, as their constructors do. Only the pickling process needs the
registration: the pickle names :func:`_rebuild`, which the unpickling process imports.
"""

from __future__ import annotations

import copyreg
import dataclasses
import importlib
import inspect
from typing import Any

__all__ = ["register"]

#: The modules whose classes guard ``__setattr__``.
_MODULES = ("floe.types", "floe.schema", "floe.partitioning", "floe.sorting",
            "floe.expressions.base", "floe.expressions.literals")
_registered = False


def _slots(cls: type) -> list[str]:
    names: list[str] = []
    for klass in cls.__mro__:
        slots = vars(klass).get("__slots__", ())
        names += [slots] if isinstance(slots, str) else list(slots)
    return [n for n in names if n not in ("__dict__", "__weakref__")]


def _rebuild(cls: type, state: dict[str, Any]) -> Any:
    obj: Any = object.__new__(cls)
    for name, value in state.items():
        object.__setattr__(obj, name, value)
    return obj


def _reduce(obj: Any) -> tuple[Any, ...]:
    state = dict(getattr(obj, "__dict__", {}))
    for name in _slots(type(obj)):
        try:
            state[name] = object.__getattribute__(obj, name)
        except AttributeError:
            continue  # an unset slot
    return _rebuild, (type(obj), state)


def _guarded(cls: type) -> bool:
    """Defines (or inherits from a floe class) a ``__setattr__`` that refuses, and is not a
    dataclass (frozen dataclasses pickle themselves)."""
    if dataclasses.is_dataclass(cls):
        return False
    return any("__setattr__" in vars(k) for k in cls.__mro__ if k.__module__.startswith("floe."))


def register() -> None:
    """Register the reducer for every guarded class of :data:`_MODULES` (idempotent)."""
    global _registered
    if _registered:
        return
    for name in _MODULES:
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == name and _guarded(cls) and "__reduce__" not in vars(cls):
                copyreg.pickle(cls, _reduce)
    _registered = True
