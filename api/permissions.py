from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from rest_framework.permissions import SAFE_METHODS, BasePermission

if TYPE_CHECKING:  # rest_framework.views imports this module through its settings
    from rest_framework.request import Request
    from rest_framework.views import APIView


class ReadAnonymouslyIfAllowed(BasePermission):
    """Reads are open to anonymous clients when FLOE_ALLOW_ANONYMOUS is true; every change
    needs an authenticated user (session or token)."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        if request.user and request.user.is_authenticated:
            return True
        return request.method in SAFE_METHODS and bool(settings.FLOE_ALLOW_ANONYMOUS)
