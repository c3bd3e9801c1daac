"""Private PostgreSQL and Redis servers for the fault tests: started on free loopback ports in
temporary directories, so a test may stop, restart or cripple them without disturbing the
machine's shared servers (other tests, other test runs).

* :class:`PrivatePostgres`: a cluster made with Debian's ``initdb`` (trust authentication on
  loopback, no fsync), run by ``pg_ctl``; as root it runs as the ``postgres`` user.
* :class:`PrivateRedis`: a ``redis-server`` child process; no persistence unless a restart
  asks to keep the data (``restart(keep_data=True)``: ``SHUTDOWN SAVE`` then load the dump,
  what a graceful restart of a Redis with snapshots configured does).

Both skip the test (or fail it, with ``FLOE_REQUIRE_POSTGRES=1``) when the binaries are
missing.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

__all__ = ["PrivatePostgres", "PrivateRedis", "free_port"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _unavailable(why: str) -> None:
    if os.environ.get("FLOE_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"FLOE_REQUIRE_POSTGRES=1 but {why}", pytrace=False)
    pytest.skip(why)


def _answers(port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


class PrivatePostgres:
    """A PostgreSQL cluster of its own. ``url(db)`` is an SQLAlchemy URL, ``dsn(db)`` a libpq
    one; ``stop()`` / ``start()`` / ``restart()`` keep the port and the data."""

    def __init__(self) -> None:
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not bins:
            _unavailable("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin")
        self.bin = Path(bins[-1]).parent
        self.port = free_port()
        # not under pytest's tmp directories: those are private to root, the server runs as
        # the postgres user
        self.root = Path(tempfile.mkdtemp(prefix="floe-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self._user: list[str] = []
        if os.geteuid() == 0:
            try:
                pg = pwd.getpwnam("postgres")
            except KeyError:
                _unavailable("running as root and there is no postgres user to run the server")
            os.chown(self.root, pg.pw_uid, pg.pw_gid)
            self._user = ["runuser", "-u", "postgres", "--"]
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres",
                  "--no-sync", "-E", "UTF8")
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(f"\nport = {self.port}\nlisten_addresses = '127.0.0.1'\n"
                       f"unix_socket_directories = '{self.root}'\nfsync = off\n"
                       "synchronous_commit = off\nfull_page_writes = off\n"
                       "max_connections = 100\n")
        self.start()

    def _run(self, tool: str, *args: str) -> None:
        done = subprocess.run([*self._user, str(self.bin / tool), *args], capture_output=True,
                              text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def sql(self, statement: str, database: str = "postgres") -> list[tuple[object, ...]]:
        """Run one statement (autocommit) and return its rows."""
        import psycopg

        with psycopg.connect(self.dsn(database), autocommit=True, connect_timeout=5) as conn:
            cur = conn.execute(statement)
            return list(cur.fetchall()) if cur.description else []

    def create_database(self, name: str) -> str:
        self.sql(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
                  "start")

    def stop(self, mode: str = "fast") -> None:
        """``fast``: sessions are ended, a clean shutdown; ``immediate``: like a crash."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def restart(self, down_for: float = 0.0, mode: str = "fast") -> None:
        self.stop(mode)
        time.sleep(down_for)
        self.start()

    def close(self) -> None:
        try:
            self.stop("immediate")
        except RuntimeError:
            pass
        shutil.rmtree(self.root, ignore_errors=True)


class PrivateRedis:
    """``redis-server`` on a free port, no persistence; ``url(db)`` its URL."""

    def __init__(self) -> None:
        self.binary = shutil.which("redis-server")
        if self.binary is None:
            _unavailable("redis-server is not installed")
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="floe-redis-"))
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> None:
        log = (self.root / "server.log").open("ab")
        self.proc = subprocess.Popen(
            [str(self.binary), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.root), "--dbfilename", "dump.rdb"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + 20
        while not self._pong():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start:\n"
                                   + (self.root / "server.log").read_text(errors="replace"))
            time.sleep(0.05)

    def _pong(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def command(self, *words: str) -> bytes:
        """One command in Redis's inline protocol; the raw first answer."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            s.sendall(" ".join(words).encode() + b"\r\n")
            try:
                return s.recv(65536)
            except ConnectionResetError:
                return b""

    def stop(self, *, keep_data: bool = False) -> None:
        """``SHUTDOWN SAVE`` (the data is loaded by the next start) or ``NOSAVE``."""
        if self.proc is None or self.proc.poll() is not None:
            return
        if not keep_data:
            (self.root / "dump.rdb").unlink(missing_ok=True)
        self.command("SHUTDOWN", "SAVE" if keep_data else "NOSAVE")
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def restart(self, *, keep_data: bool, down_for: float = 0.0) -> None:
        self.stop(keep_data=keep_data)
        time.sleep(down_for)
        self.start()

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)
