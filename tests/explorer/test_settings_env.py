import pytest
from django.core.exceptions import ImproperlyConfigured

from explorer.env import database_from_url, envbool, envchoice, envfloat, envint, envlist


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


def test_envfloat_bounds_and_garbage() -> None:
    assert envfloat("S", "1", environ={}) == 1.0
    assert envfloat("S", "1", environ={"S": " 0.25 "}) == 0.25
    for raw, message in [("fast", "is not a number"), ("nan", "not a finite number"),
                         ("inf", "not a finite number"), ("0.01", "below the minimum 0.05")]:
        with pytest.raises(ImproperlyConfigured, match=message):
            envfloat("S", "1", minimum=0.05, environ={"S": raw})


def test_envchoice() -> None:
    assert envchoice("R", "viewer", ("none", "viewer"), environ={"R": " NONE "}) == "none"
    with pytest.raises(ImproperlyConfigured, match="R='admin' is not one of none, viewer"):
        envchoice("R", "viewer", ("none", "viewer"), environ={"R": "admin"})


def test_the_worker_runs_beat_for_the_reaper(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from explorer.run import worker_command

    command = worker_command(tmp_path, 3)
    assert "--beat" in command and "--concurrency=3" in command
    assert f"--schedule={tmp_path / 'celerybeat-schedule'}" in command


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


def _settings_in_subprocess(tmp_path, code: str, **env: str):  # type: ignore[no-untyped-def]
    import os
    import subprocess
    import sys
    from pathlib import Path

    base = {k: v for k, v in os.environ.items() if not k.startswith(("FLOE_", "DATABASE_URL", "CELERY_"))}
    return subprocess.run(
        [sys.executable, "-c", f"import explorer.settings as s; {code}"],
        cwd=Path(__file__).resolve().parents[2], env={**base, "FLOE_VAR_DIR": str(tmp_path), **env},
        capture_output=True, text=True, timeout=60,
    )


def test_embedded_defaults_allow_anonymous_reading_and_a_database_url_does_not(tmp_path) -> None:  # type: ignore[no-untyped-def]
    code = "print(s.FLOE_ALLOW_ANONYMOUS, s.DATABASES['default']['ENGINE'], s.CELERY_BROKER_URL)"
    embedded = _settings_in_subprocess(tmp_path, code)
    assert embedded.stdout.split() == [
        "True", "django.db.backends.sqlite3", f"sqla+sqlite:///{tmp_path}/celery-broker.sqlite3"
    ]
    server = _settings_in_subprocess(tmp_path, code, DATABASE_URL="postgres://u:p@db/floe")
    assert server.stdout.split()[:2] == ["False", "django.db.backends.postgresql"]
    explicit = _settings_in_subprocess(tmp_path, code, FLOE_ALLOW_ANONYMOUS="false")
    assert explicit.stdout.split()[0] == "False"


def test_the_generated_secret_key_is_kept(tmp_path) -> None:  # type: ignore[no-untyped-def]
    first = _settings_in_subprocess(tmp_path, "print(s.SECRET_KEY)").stdout.strip()
    second = _settings_in_subprocess(tmp_path, "print(s.SECRET_KEY)").stdout.strip()
    assert len(first) > 40 and first == second
    assert (tmp_path / "secret-key").stat().st_mode & 0o077 == 0


def test_a_bad_value_stops_the_process_naming_the_variable(tmp_path) -> None:  # type: ignore[no-untyped-def]
    done = _settings_in_subprocess(tmp_path, "pass", FLOE_DEBUG="maybe")
    assert done.returncode != 0
    assert "FLOE_DEBUG='maybe' is not a boolean" in done.stderr
