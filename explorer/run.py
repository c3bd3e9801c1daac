"""``python -m explorer.run`` (what ``make run`` starts): everything on one machine.

1. migrate the database (SQLite under ``var/`` unless DATABASE_URL is set) and collect the
   static files into ``var/static`` (hashed names, compressed copies, served with a one-year
   cache), unless FLOE_STATIC_ROOT is set: a deployment (the Dockerfile) collects them there
   when it is built;
2. create the demo warehouse when FLOE_WAREHOUSE is not set and it does not exist yet, and
   read the catalog file (FLOE_CATALOGS): a broken one stops here, naming the file;
3. start the web server (waitress, explorer/serve.py) on FLOE_HOST:FLOE_PORT (127.0.0.1:8000)
   and one Celery worker (FLOE_WORKER_CONCURRENCY processes, with beat embedded for the
   reaper that fails runs whose worker died and removes expired exports), as child processes;
4. supervise: Ctrl-C (SIGINT) or SIGTERM stops both and exits 0; when one child dies on its
   own, the other is stopped and the exit status is 1.

``python -m explorer.run --prod`` (``make serve-prod``, the Dockerfile's command) is the
production shape of the same steps: PostgreSQL (DATABASE_URL) and a broker that is not the
SQLite one (CELERY_BROKER_URL, Redis), a secret key and the allowed hosts set (else it stops
with exit status 2, naming the variable: :func:`production_problems`); gunicorn with
FLOE_WEB_PROCESSES processes, FLOE_WORKERS Celery workers (each its own ``celery worker``
process) and one ``celery beat``, all supervised as above.

The children run in their own process groups, so a Ctrl-C in the terminal reaches this
process only and each child gets exactly one stop signal from it.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import FrameType

# Seconds a child may take to stop after its stop signal before it is killed.
STOP_TIMEOUT = 30.0
POLL_INTERVAL = 0.2
# Written last into the demo warehouse: a directory without it is an interrupted creation.
DEMO_COMPLETE_MARKER = ".floe-demo-complete"
# The marker's content: a demo of another version is written again. 2: every commit stamped
# when it happened (version 1 back-dated commits into metadata Iceberg Java refuses to load).
DEMO_VERSION = "2"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args not in ([], ["--prod"]):
        _say("usage: python -m explorer.run [--prod]")
        return 2
    prod = args == ["--prod"]
    if prod:
        problems = production_problems(os.environ)
        for problem in problems:
            _say(f"Floe: --prod: {problem}")
        if problems:
            return 2
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "explorer.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from explorer.env import envint, envstr

    host = envstr("FLOE_HOST", "127.0.0.1")
    port = envint("FLOE_PORT", "8000", minimum=1, maximum=65535)

    settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
    call_command("migrate", interactive=False, verbosity=1)
    if settings.STATIC_ROOT is None:  # a deployment that sets it collects them itself
        collect_static(settings.VAR_DIR / "static")
    # the web server and the worker share one persistent cache of decoded manifests
    os.environ.setdefault("FLOE_MANIFEST_CACHE", str(settings.VAR_DIR / "manifest-cache"))
    if settings.FLOE_WAREHOUSE_IS_DEMO:
        ensure_demo_warehouse(settings.FLOE_WAREHOUSE)
    from explorer.catalogs import check_configuration
    from floe.errors import FloeError

    try:
        catalogs = check_configuration()
    except FloeError as exc:
        _say(f"Floe: {exc}")
        return 2

    from django.db import connections

    connections.close_all()  # this process only supervises from here on
    stop_signals: dict[str, int] = {}
    if prod:
        commands = production_commands(host, port, settings.VAR_DIR,
                                       web_processes=envint("FLOE_WEB_PROCESSES", "2",
                                                            minimum=1, maximum=64),
                                       workers=envint("FLOE_WORKERS", "2", minimum=1,
                                                      maximum=64),
                                       concurrency=settings.FLOE_WORKER_CONCURRENCY)
        stop_signals["web"] = signal.SIGTERM  # gunicorn's graceful stop (SIGINT: quick)
    else:
        commands = {"web": web_command(host, port),
                    "worker": worker_command(settings.VAR_DIR,
                                             settings.FLOE_WORKER_CONCURRENCY)}
    display_host = f"[{host}]" if ":" in host else host
    names = ", ".join(c.name for c in catalogs)
    for broken in (c for c in catalogs if c.problem):  # the others serve; this one says why
        _say(f"Floe: catalog {broken.name!r} cannot be used: {broken.problem}")
    _say(f"Floe: http://{display_host}:{port}/ · warehouse {settings.FLOE_WAREHOUSE} · "
         f"catalogs {names} · Ctrl-C stops")
    return Supervisor(commands, stop_signals=stop_signals).run()


def production_problems(environ: Mapping[str, str]) -> list[str]:
    """Why ``--prod`` must not start with this environment, one line per variable: the
    settings that have an embedded default (a generated key, local hosts, SQLite) must be
    set for a deployment."""
    from django.core.exceptions import ImproperlyConfigured

    from explorer.env import database_from_url, envlist, envstr

    problems = []
    if not envstr("FLOE_SECRET_KEY", "", environ=environ).strip():
        problems.append("FLOE_SECRET_KEY is not set (no key is generated in production)")
    if not envlist("FLOE_ALLOWED_HOSTS", "", environ=environ):
        problems.append("FLOE_ALLOWED_HOSTS is not set (the host names the site answers to)")
    database = envstr("DATABASE_URL", "", environ=environ)
    if not database:
        problems.append("DATABASE_URL is not set (postgres://USER:PASSWORD@HOST:PORT/NAME)")
    else:
        try:
            engine = database_from_url(database)["ENGINE"]
        except ImproperlyConfigured as exc:
            problems.append(str(exc))
        else:
            if engine == "django.db.backends.sqlite3":
                problems.append("DATABASE_URL is SQLite (use PostgreSQL: postgres://...)")
    broker = envstr("CELERY_BROKER_URL", "", environ=environ)
    if not broker:
        problems.append("CELERY_BROKER_URL is not set (redis://HOST:PORT/DB)")
    elif broker.lower().startswith("sqla+sqlite"):
        problems.append("CELERY_BROKER_URL is the SQLite broker (use Redis: redis://...)")
    return problems


def production_commands(host: str, port: int, var_dir: Path, *, web_processes: int,
                        workers: int, concurrency: int) -> dict[str, list[str]]:
    """gunicorn with ``web_processes`` processes, ``workers`` Celery workers of
    ``concurrency`` pool processes each, and the one beat."""
    commands = {"web": gunicorn_command(host, port, web_processes)}
    for n in range(1, workers + 1):
        commands[f"worker-{n}"] = worker_command(var_dir, concurrency, beat=False,
                                                 name=f"floe-{n}")
    commands["beat"] = beat_command(var_dir)
    return commands


def gunicorn_command(host: str, port: int, processes: int) -> list[str]:
    """gunicorn's threaded workers (a slow page does not hold up a whole process); SIGTERM
    lets the requests in flight finish (STOP_TIMEOUT bounds it)."""
    bind = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return [sys.executable, "-m", "gunicorn", f"--bind={bind}", f"--workers={processes}",
            "--worker-class=gthread", "--threads=8", "--timeout=120",
            f"--graceful-timeout={int(STOP_TIMEOUT) - 5}", "--no-control-socket",
            "explorer.wsgi:application"]


def collect_static(root: str | Path) -> None:
    """Collect the static files into ``root`` with hashed names and compressed copies
    (explorer.settings: FLOE_STATIC_ROOT), for the children, which inherit the setting."""
    os.environ["FLOE_STATIC_ROOT"] = str(root)
    done = subprocess.run([sys.executable, "-m", "django", "collectstatic", "--noinput",
                           "--verbosity=0"], env={**os.environ}, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"Floe: collecting the static files into {root} failed:\n"
                         f"{done.stderr.strip()[-2000:]}")


def web_command(host: str, port: int) -> list[str]:
    listen = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return [sys.executable, "-m", "explorer.serve", f"--listen={listen}", "--threads=8",
            "explorer.wsgi:application"]


def worker_command(var_dir: Path, concurrency: int = 2, *, beat: bool = True,
                   name: str = "floe") -> list[str]:
    """A Celery worker called ``name``, with beat embedded (``-B``: the reaper,
    explorer.tasks.reap) unless ``beat`` is false (``--prod`` runs one beat of its own).

    prefork is the pool that enforces the tasks' time limits; more than one process lets a
    short task (and the reaper) run beside a long one. The SQL broker has no fan-out, so
    gossip, mingle and event heartbeats stay off. Beat's schedule file lives in ``var/``."""
    command = [sys.executable, "-m", "celery", "-A", "explorer", "worker", "--pool=prefork",
               f"--concurrency={concurrency}", "--loglevel=INFO", "--without-gossip",
               "--without-mingle", "--without-heartbeat", f"--hostname={name}@%h"]
    if beat:
        command += ["--beat", f"--schedule={Path(var_dir) / 'celerybeat-schedule'}"]
    return command


def beat_command(var_dir: Path) -> list[str]:
    """The one Celery beat of ``--prod`` (two would queue every scheduled task twice)."""
    return [sys.executable, "-m", "celery", "-A", "explorer", "beat", "--loglevel=INFO",
            f"--schedule={Path(var_dir) / 'celerybeat-schedule'}"]


def ensure_demo_warehouse(path: str) -> None:
    """Create the demo tables with floe (absolute paths live in Iceberg metadata, so they are
    written in place; an interrupted creation is detected by the missing marker and redone)."""
    target = Path(path)
    marker = target / DEMO_COMPLETE_MARKER
    if marker.exists() and marker.read_text().strip() == DEMO_VERSION:
        return
    if marker.exists():
        _say(f"Floe: {target} is a demo warehouse of an older Floe; creating it again")
        shutil.rmtree(target)
    elif target.exists():
        _say(f"Floe: {target} is an incomplete demo warehouse; creating it again")
        shutil.rmtree(target)
    try:
        from floe.demo import create_demo_warehouse
    except ModuleNotFoundError as exc:
        if exc.name != "floe.demo":
            raise
        _say("Floe: floe.demo is not available in this checkout; no demo warehouse created")
        return
    from explorer.demo import add_demo_changes

    _say(f"Floe: creating the demo warehouse in {target}")
    create_demo_warehouse(str(target))
    add_demo_changes(str(target))  # deletes, evolution, branches and nested values
    marker.write_text(DEMO_VERSION)


class Supervisor:
    """Runs child processes until a stop signal arrives or one of them exits."""

    def __init__(
        self, commands: Mapping[str, list[str]], *, stop_timeout: float = STOP_TIMEOUT,
        stop_signals: Mapping[str, int] | None = None,
    ) -> None:
        self.commands = dict(commands)
        self.stop_timeout = stop_timeout
        # the signal that asks a child to finish what it is doing and exit; SIGINT unless told
        self.stop_signals = dict(stop_signals or {})
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self._stop_signal: int | None = None

    def run(self) -> int:
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            for name, command in self.commands.items():
                child = subprocess.Popen(command, process_group=0, preexec_fn=_die_with_parent)
                self.children[name] = child
                _say(f"Floe: started {name} (pid {child.pid})")
            return self._supervise()
        finally:
            self._stop_all()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._stop_signal = signum

    def _supervise(self) -> int:
        while self._stop_signal is None:
            for name, child in self.children.items():
                status = child.poll()
                if status is not None:
                    _say(f"Floe: {name} exited with status {status}; stopping the others")
                    return 1
            time.sleep(POLL_INTERVAL)
        _say(f"Floe: {signal.Signals(self._stop_signal).name} received; stopping")
        return 0 if self._stop_all() else 1

    def _stop_all(self) -> bool:
        """Stop every running child; True when all stopped within the timeout."""
        running = {n: c for n, c in self.children.items() if c.poll() is None}
        for name, child in running.items():
            # waitress and Celery treat SIGINT as "finish what you are doing and exit"
            _signal(child, self.stop_signals.get(name, signal.SIGINT))
        deadline = time.monotonic() + self.stop_timeout
        clean = True
        for name, child in running.items():
            try:
                child.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _say(f"Floe: {name} did not stop within {self.stop_timeout:.0f}s; killing it")
                _signal(child, signal.SIGKILL, group=True)
                child.wait()
                clean = False
        return clean


def _signal(child: subprocess.Popen[bytes], sig: int, *, group: bool = False) -> None:
    try:
        if group:  # the child's own processes (Celery's pool) too
            os.killpg(child.pid, sig)
        else:
            child.send_signal(sig)
    except ProcessLookupError:
        pass


def _die_with_parent() -> None:
    """Linux: a child gets SIGTERM if this process is killed without a chance to stop it."""
    if sys.platform.startswith("linux"):
        PR_SET_PDEATHSIG = 1
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
