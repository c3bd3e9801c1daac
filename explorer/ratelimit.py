"""A per-user limit on expensive reads: scan plans, change previews and exports, pages and API
alike (``FLOE_EXPENSIVE_READS_PER_MINUTE``; 0 turns it off).

A fixed one-minute window counted in Django's cache (per process with the default local-memory
cache, which is what ``make run``'s single web process uses; configure a shared cache for
several). Signed-in users are counted by id, anonymous visitors by address. Over the limit is
:class:`explorer.errors.RateLimited`: 429 with ``Retry-After`` through the one error mapping.
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.cache import cache

from explorer.errors import RateLimited

__all__ = ["expensive_read_check", "request_identity"]

WINDOW_SECONDS = 60


def request_identity(request: Any) -> str:
    """Who a request counts against: the user, or for anonymous visitors their address."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return f"user:{user.pk}"
    return f"addr:{request.META.get('REMOTE_ADDR', '')}"


def expensive_read_check(*, identity: str, what: str) -> None:
    """Count one expensive read for ``identity``; RateLimited when it is one too many."""
    limit = settings.FLOE_EXPENSIVE_READS_PER_MINUTE
    if limit <= 0:
        return
    now = time.time()
    window = int(now // WINDOW_SECONDS)
    key = f"floe:expensive:{identity}:{window}"
    cache.add(key, 0, WINDOW_SECONDS + 5)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, WINDOW_SECONDS + 5)
        count = 1
    if count > limit:
        retry_after = max(1, int((window + 1) * WINDOW_SECONDS - now) + 1)
        raise RateLimited(
            f"too many expensive reads (scan plans, previews, exports): {limit} a minute are "
            f"allowed; {what} refused, try again in {retry_after} s", retry_after)
