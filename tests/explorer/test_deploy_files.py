"""The Dockerfile and docker-compose.yml agree with the code (the image cannot be built here):
both run the production shape, on the port the image exposes, with variables the settings
module or explorer.run reads, and probe a URL the site serves."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.test import Client

REPO = Path(__file__).resolve().parents[2]
PROD_COMMAND = ["python", "-m", "explorer.run", "--prod"]
VARIABLE = re.compile(r"\b(FLOE_[A-Z0-9_]+|DATABASE_URL|CELERY_BROKER_URL)\b")
PROBE_URL = re.compile(r"http://127\.0\.0\.1:(?:(\d+)|' \+ [^+]+ \+ ')(/[a-z]+)")


def _dockerfile() -> dict[str, list[str]]:
    """The Dockerfile's instructions by name (continuation lines joined, comments dropped)."""
    text = re.sub(r"\\\n\s*", " ", (REPO / "Dockerfile").read_text())
    instructions: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, rest = line.strip().partition(" ")
            instructions.setdefault(name.upper(), []).append(rest.strip())
    return instructions


def _dockerfile_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for args in _dockerfile()["ENV"]:
        env.update(word.split("=", 1) for word in shlex.split(args))
    return env


def _floe_service() -> dict[str, Any]:
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    return compose["services"]["floe"]  # type: ignore[no-any-return]


def _read_by_the_code() -> str:
    return "\n".join((REPO / "explorer" / name).read_text() for name in ("settings.py", "run.py"))


def test_both_run_the_production_shape() -> None:
    assert json.loads(_dockerfile()["CMD"][-1]) == PROD_COMMAND
    assert _floe_service()["command"] == PROD_COMMAND
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^serve-prod:.*\n\t\$\(PY\) -m explorer\.run --prod$", makefile, re.M)


def test_the_port_is_the_one_exposed_published_and_probed() -> None:
    port = _dockerfile_env()["FLOE_PORT"]
    assert _dockerfile()["EXPOSE"] == [port]
    assert _dockerfile_env()["FLOE_HOST"] == "0.0.0.0"
    published = [p.rsplit(":", 1)[1] for p in _floe_service()["ports"]]
    assert published == [port]
    compose_probe = PROBE_URL.search(" ".join(_floe_service()["healthcheck"]["test"]))
    assert compose_probe and compose_probe.group(1) == port
    docker_probe = PROBE_URL.search(" ".join(_dockerfile()["HEALTHCHECK"]))
    # the image's probe reads FLOE_PORT, whose default is the port
    assert docker_probe and "os.environ.get('FLOE_PORT', '8000')" in docker_probe.group(0)


def test_every_variable_they_set_or_name_is_read_by_the_code() -> None:
    code = _read_by_the_code()
    named = set(VARIABLE.findall((REPO / "Dockerfile").read_text()))
    named |= set(VARIABLE.findall((REPO / "docker-compose.yml").read_text()))
    assert {"DATABASE_URL", "CELERY_BROKER_URL", "FLOE_SECRET_KEY", "FLOE_ALLOWED_HOSTS",
            "FLOE_WEB_PROCESSES", "FLOE_WORKERS"} <= named
    unread = sorted(n for n in named if f'"{n}"' not in code)
    assert not unread, f"set in the deployment files but read nowhere: {unread}"


def test_compose_sets_what_prod_requires() -> None:
    from explorer.run import production_problems

    environment = {k: re.sub(r"\$\{\w+:[-?]([^}]*)\}", r"\1", str(v))
                   for k, v in _floe_service()["environment"].items()}
    assert production_problems(environment) == []
    assert production_problems({}) != []


@pytest.mark.django_db
def test_the_probed_paths_are_served_whatever_the_allowed_hosts(settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["floe.example.com"]  # a probe's Host is 127.0.0.1:8000
    probes = (" ".join(_dockerfile()["HEALTHCHECK"]),
              " ".join(_floe_service()["healthcheck"]["test"]))
    paths = {m.group(2) for m in map(PROBE_URL.search, probes) if m}
    assert paths == {"/readyz"}
    client = Client(HTTP_HOST="127.0.0.1:8000")
    for path in (*paths, "/healthz"):
        response = client.get(path)
        assert response.status_code in (200, 503), (path, response.status_code)
        assert response["Content-Type"] == "application/json"
        assert "status" in response.json()
    assert client.get("/").status_code == 400  # the host check still holds for the rest
