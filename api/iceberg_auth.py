"""Who calls the Iceberg REST catalog (``/iceberg/``): an ``Authorization: Bearer`` token that
is either a user's API token (the site's, ``rest_framework.authtoken``; PyIceberg's
``token``) or an access token issued by the OAuth2 endpoint (``/iceberg/v1/oauth/tokens``,
client credentials: client id = user name, client secret = that user's API token, in the
form body or as HTTP Basic; PyIceberg's ``credential = "user:token"``).

Access tokens are signed by the site (``django.core.signing``, its secret key), name the user
and a digest of the API token they were issued for, and expire after
``FLOE_ICEBERG_TOKEN_TTL`` seconds (``expires_in``): replacing or revoking the API token, or
deactivating the user, ends them at once. ``Bearer None`` (what PyIceberg sends without
credentials) is no token.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import urllib.parse
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.db import connection
from rest_framework.authtoken.models import Token

from floe.rest_server import NotAuthorized

__all__ = ["OAuthError", "access_token_issue", "bearer_user", "client_credentials",
           "token_exchange"]

_SALT = "floe.iceberg.access-token"
#: What a bearer value that carries no token looks like (PyIceberg without credentials).
_NO_TOKEN = frozenset({"", "none", "null", "undefined"})
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"


class OAuthError(Exception):
    """An OAuth2 error answer (RFC 6749 5.2): ``error`` code, a description, the status."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def _api_token_of(user: Any) -> Token | None:
    return Token.objects.filter(user=user).first()


def access_token_issue(user: Any, api_key: str) -> dict[str, Any]:
    """An OAuth2 token answer for ``user``, whose API token is ``api_key``."""
    ttl = int(settings.FLOE_ICEBERG_TOKEN_TTL)
    token = signing.dumps({"u": user.pk, "k": _digest(api_key)}, salt=_SALT)
    return {"access_token": token, "token_type": "bearer", "expires_in": ttl,
            "issued_token_type": ACCESS_TOKEN_TYPE}


#: What a request needs of its user (the rest is loaded if asked for).
_USER_FIELDS = ("pk", "USERNAME", "is_active", "is_superuser", "is_staff")


@functools.cache
def _user_query(where: str, vendor: str) -> tuple[str, list[str]]:
    """One statement: the user fields every request needs and the user's API token key, the
    user and token tables joined, filtered by ``where`` (``"token"`` or ``"user"``)."""
    user_model = get_user_model()
    quote = connection.ops.quote_name
    meta, token = user_model._meta, Token._meta
    wanted = {meta.pk if f == "pk" else meta.get_field(
        user_model.USERNAME_FIELD if f == "USERNAME" else f) for f in _USER_FIELDS}
    fields = [f for f in meta.concrete_fields if f in wanted]  # the order from_db expects
    columns = ", ".join(f"u.{quote(f.column)}" for f in fields)
    key = quote(token.get_field("key").column)
    on = f"t.{quote(token.get_field('user').column)} = u.{quote(meta.pk.column)}"
    filter_on = f"t.{key}" if where == "token" else f"u.{quote(meta.pk.column)}"
    return (f"SELECT {columns}, t.{key} FROM {quote(meta.db_table)} u "
            f"JOIN {quote(token.db_table)} t ON {on} WHERE {filter_on} = %s",
            [f.attname for f in fields])


def _user_with_key(where: str, value: Any) -> tuple[Any, str] | None:
    """The user (with API token) found by API token key (``where="token"``) or by user pk
    (``"user"``), and that token's key.

    A REST client sends its token on every request: one plain SQL statement (not the ORM's
    query building, about 1 ms a request), and a fresh user object each time (roles cached
    on it must not outlive the request) holding the fields authorisation reads; any other
    field is loaded when asked for."""
    sql, attnames = _user_query(where, connection.vendor)
    with connection.cursor() as cursor:
        cursor.execute(sql, [value])
        row = cursor.fetchone()
    if row is None:
        return None
    *values, key = row
    model = get_user_model()
    booleans = {f.attname for f in model._meta.concrete_fields
                if f.get_internal_type() == "BooleanField"}
    # SQLite answers 0/1 for booleans
    user = model.from_db(connection.alias, attnames,
                         [bool(v) if a in booleans else v for a, v in zip(attnames, values)])
    return user, key


def _user_by_api_key(key: str) -> Any | None:
    found = _user_with_key("token", key)
    return None if found is None else found[0]


def _user_by_access_token(value: str) -> Any:
    try:
        payload = signing.loads(value, salt=_SALT, max_age=int(settings.FLOE_ICEBERG_TOKEN_TTL))
    except signing.SignatureExpired:
        raise NotAuthorized("the access token has expired: ask /v1/oauth/tokens for a new "
                            "one") from None
    except signing.BadSignature:
        raise NotAuthorized("the bearer token is neither an API token nor an access token "
                            "this site issued") from None
    if not isinstance(payload, dict):
        raise NotAuthorized("the access token is malformed")
    found = _user_with_key("user", payload["u"]) if payload.get("u") is not None else None
    if found is None or not hmac.compare_digest(_digest(found[1]), str(payload.get("k"))):
        raise NotAuthorized("the API token this access token was issued for has been "
                            "replaced or revoked")
    return found[0]


def bearer_user(authorization: str | None) -> Any:
    """The user an ``Authorization`` header authenticates (NotAuthorized otherwise)."""
    if not authorization:
        raise NotAuthorized("authentication needed: send Authorization: Bearer <API token "
                            "or access token>")
    scheme, _, value = authorization.strip().partition(" ")
    value = value.strip()
    if scheme.lower() not in ("bearer", "token"):
        raise NotAuthorized(f"unsupported authorization scheme {scheme[:20]!r}: send "
                            "Authorization: Bearer <token>")
    if value.lower() in _NO_TOKEN:
        raise NotAuthorized("authentication needed: the request carries no token (Bearer "
                            f"{value or '(empty)'})")
    user = _user_by_access_token(value) if ":" in value else _user_by_api_key(value)
    if user is None:
        raise NotAuthorized("the bearer token is not a valid API token")
    if not user.is_active:
        raise NotAuthorized(f"user {user.get_username()!r} is deactivated")
    return user


def _basic(authorization: str | None) -> tuple[str, str] | None:
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        text = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise OAuthError("invalid_request", "the Basic authorization header is not "
                         "base64 of client_id:client_secret") from None
    client_id, sep, secret = text.partition(":")
    if not sep:
        raise OAuthError("invalid_request", "the Basic authorization header has no "
                         "client_id:client_secret")
    # RFC 6749 2.3.1: both are form-urlencoded before Basic encoding
    return urllib.parse.unquote_plus(client_id), urllib.parse.unquote_plus(secret)


def client_credentials(form: dict[str, str], authorization: str | None) -> dict[str, Any]:
    """The client credentials grant: the user named by the client id whose API token is the
    client secret (form fields, or HTTP Basic)."""
    basic = _basic(authorization)
    client_id, secret = basic if basic is not None else (form.get("client_id", ""),
                                                          form.get("client_secret", ""))
    if not client_id or not secret:
        raise OAuthError("invalid_request", "client_id and client_secret are needed (the "
                         "user name and an API token), in the form or as HTTP Basic")
    user = get_user_model().objects.filter(**{get_user_model().USERNAME_FIELD: client_id}
                                           ).first()
    api = _api_token_of(user) if user is not None else None
    if user is None or api is None or not user.is_active or not hmac.compare_digest(
            api.key.encode(), secret.encode()):
        raise OAuthError("invalid_client", "unknown client or wrong secret (the client id is "
                         "a user name, the secret that user's API token)", status=401)
    return access_token_issue(user, api.key)


def token_exchange(form: dict[str, str], authorization: str | None) -> dict[str, Any]:
    """RFC 8693 token exchange as Iceberg's Java client uses it to refresh: a valid subject
    token (an access token or API token) for a fresh access token of the same user."""
    subject = form.get("subject_token", "")
    if not subject:
        raise OAuthError("invalid_request", "token exchange needs a subject_token")
    try:
        user = bearer_user(f"Bearer {subject}")
    except NotAuthorized as e:
        raise OAuthError("invalid_grant", e.message, status=401) from None
    api = _api_token_of(user)
    if api is None:
        raise OAuthError("invalid_grant", "the user has no API token", status=401)
    return access_token_issue(user, api.key)
