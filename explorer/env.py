"""Strict readers for settings that come from the environment.

A typo in an environment variable must stop the process with a message naming the variable,
never silently fall back to a default (after healthchecks' ``envbool``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def envstr(name: str, default: str, *, environ: Mapping[str, str] = os.environ) -> str:
    return environ.get(name, default)


def envbool(name: str, default: str, *, environ: Mapping[str, str] = os.environ) -> bool:
    value = environ.get(name, default).strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"{name}={environ.get(name, default)!r} is not a boolean (use true/false, 1/0, yes/no, on/off)"
    )


def envint(
    name: str,
    default: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    environ: Mapping[str, str] = os.environ,
) -> int:
    raw = environ.get(name, default)
    try:
        value = int(raw.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below the minimum {minimum}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}={value} is above the maximum {maximum}")
    return value


def envfloat(
    name: str,
    default: str,
    *,
    minimum: float | None = None,
    environ: Mapping[str, str] = os.environ,
) -> float:
    raw = environ.get(name, default)
    try:
        value = float(raw.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ImproperlyConfigured(f"{name}={raw!r} is not a finite number")
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value:g} is below the minimum {minimum:g}")
    return value


def envchoice(
    name: str, default: str, choices: tuple[str, ...], *, environ: Mapping[str, str] = os.environ
) -> str:
    value = environ.get(name, default).strip().lower()
    if value not in choices:
        raise ImproperlyConfigured(
            f"{name}={environ.get(name, default)!r} is not one of {', '.join(choices)}")
    return value


def envlist(name: str, default: str, *, environ: Mapping[str, str] = os.environ) -> list[str]:
    """A comma-separated list; blanks around items and empty items are dropped."""
    return [item.strip() for item in environ.get(name, default).split(",") if item.strip()]


def database_from_url(url: str) -> dict[str, Any]:
    """Django's DATABASES entry for ``sqlite:///relative``, ``sqlite:////absolute`` or
    ``postgres://user:password@host:port/name?sslmode=require`` (``postgresql://`` too)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "sqlite":
        # sqlite:///var/x.db -> "var/x.db"; sqlite:////srv/x.db -> "/srv/x.db"
        name = unquote(parts.path[1:]) if parts.path.startswith("/") else unquote(parts.path)
        if parts.netloc or not name:
            raise ImproperlyConfigured(f"DATABASE_URL {url!r}: use sqlite:///relative or sqlite:////absolute")
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": name}
    if scheme in ("postgres", "postgresql", "pgsql"):
        name = unquote(parts.path.lstrip("/"))
        if not name:
            raise ImproperlyConfigured("DATABASE_URL names no database (postgres://host/NAME)")
        try:
            port = parts.port
        except ValueError:
            raise ImproperlyConfigured("DATABASE_URL has a port that is not a number") from None
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": name,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": unquote(parts.hostname or ""),
            "PORT": str(port or ""),
            "OPTIONS": dict(parse_qsl(parts.query)),
        }
    raise ImproperlyConfigured(
        f"DATABASE_URL scheme {parts.scheme!r} is not supported (use sqlite:// or postgres://)"
    )
