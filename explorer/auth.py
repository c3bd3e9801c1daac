from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse


def can_read(request: HttpRequest) -> bool:
    return bool(settings.FLOE_ALLOW_ANONYMOUS or request.user.is_authenticated)


def read_access_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Pages that only read: open to anonymous visitors when FLOE_ALLOW_ANONYMOUS is true."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        if not can_read(request):
            return redirect_to_login(request.get_full_path())
        return view(request, *args, **kwargs)

    return wrapper
