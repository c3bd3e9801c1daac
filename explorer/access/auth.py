"""Decorators for page views, over the decisions of :mod:`explorer.access.permissions` and the limit
of :mod:`explorer.ratelimit`."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse

from explorer import ratelimit
from explorer.access import permissions


def can_read(request: HttpRequest, catalog: str | None = None) -> bool:
    return permissions.can_read(user=request.user, catalog=catalog)


def read_access_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Pages that only read: the viewer role on the page's catalog (anonymous visitors have it
    when FLOE_ALLOW_ANONYMOUS is true); without it, anonymous visitors go to the login page
    and signed-in users get 403."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        catalog = kwargs.get("catalog")
        catalog = catalog if isinstance(catalog, str) else None
        if not can_read(request, catalog):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            permissions.require_read(user=request.user, catalog=catalog or "*")
        return view(request, *args, **kwargs)

    return wrapper


View = Callable[..., HttpResponse]


def expensive_read(what: str) -> Callable[[View], View]:
    """Pages that plan or read many files count against the per-user rate limit (429)."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
            ratelimit.expensive_read_check(identity=ratelimit.request_identity(request),
                                           what=what)
            return view(request, *args, **kwargs)

        return wrapper

    return decorate
