"""Errors from Spark jobs as one line a person reads.

A floe error raised on an executor (or in the Python process Spark runs a data source's
planning or commit in) reaches the driver wrapped in a ``PythonException`` /
``AnalysisException`` / ``Py4JJavaError`` whose text is a JVM stack trace around a Python
traceback. :func:`spark_errors` turns it back into the floe error it was (the same class, the
same message); anything else becomes a :class:`SparkJobError` whose message is the first
meaningful line (the exception line of the innermost Python traceback, else Spark's own
message without its stack).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from floe import errors

__all__ = ["SparkJobError", "spark_errors", "floe_error_of", "first_line"]


class SparkJobError(errors.FloeError):
    """A Spark job failed for a reason that is not a floe error (an executor's exception, a
    Spark analysis error)."""


#: floe errors defined above floe.errors, by the name a traceback shows: re-raised as the
#: floe.errors class they derive from (every class of floe.errors is re-raised as itself).
_ELSEWHERE: dict[str, type[errors.FloeError]] = {
    "TableAlreadyExists": errors.ValidationError,
    "NamespaceAlreadyExists": errors.ValidationError,
    "NamespaceNotEmpty": errors.ValidationError,
    "CommitRefused": errors.ValidationError,
    "UnsupportedOperation": errors.FloeError,
    "Cancelled": errors.FloeError,
    "UnsupportedDeletes": errors.FloeError,
    "SparkJobError": errors.FloeError,
}
_FLOE_LINE = re.compile(r"^(?:floe\.[\w.]+\.)?([A-Z]\w*): (.+)$")
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)): (.+)$")
#: Spark's own wrappers around a Python traceback: never the meaningful line
_WRAPPERS = ("PythonException", "AnalysisException", "Py4JJavaError", "SparkException",
             "PySparkRuntimeError", "PySparkAssertionError", "CapturedException")
_NOISE = re.compile(r"\s*SQLSTATE: \w+\s*$")


def _lines(text: str) -> list[str]:
    # py4j puts the Java exception after ": " on its own line
    return [line.strip().removeprefix(": ") for line in text.splitlines() if line.strip()]


def _floe_error(name: str, message: str) -> errors.FloeError | None:
    """The floe error ``name: message`` was, rebuilt; None when ``name`` is no floe error."""
    cls = getattr(errors, name, None)
    if not (isinstance(cls, type) and issubclass(cls, errors.FloeError)):
        cls = _ELSEWHERE.get(name)
        if cls is None:
            return None
    if issubclass(cls, errors.MetadataError):  # (location, problem), shown "location: problem"
        location, sep, problem = message.partition(": ")
        return cls(location, problem) if sep else errors.FloeError(message)
    if issubclass(cls, errors.InvalidArgument):  # its argument's name is not in the text
        return errors.ValidationError(message)
    return cls(message)


def floe_error_of(text: str) -> errors.FloeError | None:
    """The floe error a traceback text ends in (the innermost one), or None."""
    found: errors.FloeError | None = None
    for line in _lines(text):
        m = _FLOE_LINE.match(line)
        if m:
            found = _floe_error(m.group(1), _NOISE.sub("", m.group(2))) or found
    return found


def first_line(text: str) -> str:
    """The line of a Spark error worth showing: the last Python exception line that is not a
    Spark wrapper, else the first line of Spark's message (error class kept, SQLSTATE and
    stack dropped)."""
    lines = _lines(text)
    chosen = None
    for line in lines:
        m = _EXCEPTION_LINE.match(line)
        if m and m.group(1).split(".")[-1] not in _WRAPPERS:
            chosen = f"{m.group(1).split('.')[-1]}: {m.group(2)}"
    if chosen is None:
        chosen = next((ln for ln in lines if not ln.startswith(("at ", "File ", "Traceback"))),
                      "the Spark job failed")
    return _NOISE.sub("", chosen)[:1000]


def _is_spark_error(e: BaseException) -> bool:
    names = {c.__name__ for c in type(e).__mro__}
    return bool(names & {"CapturedException", "Py4JJavaError", "Py4JError", "PySparkException"})


@contextmanager
def spark_errors() -> Iterator[None]:
    """Turn an exception from a Spark job into a floe error of one line (see module doc)."""
    try:
        yield
    except errors.FloeError:
        raise
    except Exception as e:
        if not _is_spark_error(e):
            raise
        text = str(e)
        found = floe_error_of(text)
        if found is not None:
            raise found from None
        raise SparkJobError(first_line(text)) from None
