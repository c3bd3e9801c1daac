"""Sizes for people, in one unit system (binary: KiB, MiB, … as the charts' axes), for pages,
charts and the texts the core writes in bytes."""

from __future__ import annotations

import re

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_BYTES = re.compile(r"\b(\d{4,}) bytes\b")


def size_text(n: int | float) -> str:
    """``1536`` → ``1.5 KiB``; below 1 KiB a whole number of bytes (``512 B``)."""
    value, unit = float(n), 0
    while abs(value) >= 1024 and unit < len(_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    if unit == 0:
        return f"{int(n):,} B"
    return f"{value:,.1f} {_UNITS[unit]}"


def sizes_in_text(text: str) -> str:
    """``… smaller than 33554432 bytes`` → ``… smaller than 32.0 MiB``."""
    return _BYTES.sub(lambda m: size_text(int(m.group(1))), text)
