import pytest
from django.core.exceptions import ImproperlyConfigured

from explorer.env import database_from_url, envbool, envint, envlist


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("true", True), ("True", True), ("1", True), ("yes", True), ("on", True),
     ("false", False), ("FALSE", False), ("0", False), ("no", False), ("off", False)],
)
def test_envbool_reads_the_usual_spellings(raw: str, expected: bool) -> None:
    assert envbool("X", "false", environ={"X": raw}) is expected


@pytest.mark.parametrize("raw", ["", "ture", "2", "enabled", "y"])
def test_envbool_rejects_anything_else_naming_the_variable(raw: str) -> None:
    with pytest.raises(ImproperlyConfigured, match="FLOE_DEBUG"):
        envbool("FLOE_DEBUG", "false", environ={"FLOE_DEBUG": raw})


def test_envbool_default_applies_when_unset() -> None:
    assert envbool("X", "true", environ={}) is True


def test_envint_bounds_and_garbage() -> None:
    assert envint("P", "8000", environ={}) == 8000
    assert envint("P", "8000", environ={"P": " 9000 "}) == 9000
    with pytest.raises(ImproperlyConfigured, match="P='80a0' is not an integer"):
        envint("P", "8000", environ={"P": "80a0"})
    with pytest.raises(ImproperlyConfigured, match="above the maximum"):
        envint("P", "8000", maximum=65535, environ={"P": "70000"})
    with pytest.raises(ImproperlyConfigured, match="below the minimum"):
        envint("P", "8000", minimum=1, environ={"P": "0"})


def test_envlist_drops_blanks() -> None:
    assert envlist("H", "a, b,,c ,", environ={}) == ["a", "b", "c"]


def test_database_url_postgres() -> None:
    db = database_from_url("postgres://floe:p%40ss@db.internal:5433/floe?sslmode=require")
    assert db == {
        "ENGINE": "django.db.backends.postgresql", "NAME": "floe", "USER": "floe",
        "PASSWORD": "p@ss", "HOST": "db.internal", "PORT": "5433",
        "OPTIONS": {"sslmode": "require"},
    }


def test_database_url_sqlite_relative_and_absolute() -> None:
    assert database_from_url("sqlite:///var/x.sqlite3")["NAME"] == "var/x.sqlite3"
    assert database_from_url("sqlite:////srv/floe/x.sqlite3")["NAME"] == "/srv/floe/x.sqlite3"


@pytest.mark.parametrize(
    "url", ["mysql://u@h/db", "postgres://h:5432/", "postgres://h:port/db", "sqlite://", "nonsense"]
)
def test_database_url_rejects_what_it_cannot_use(url: str) -> None:
    with pytest.raises(ImproperlyConfigured):
        database_from_url(url)
