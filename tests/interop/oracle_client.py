"""The client side of ``oracle_server.py``: a JSON-lines conversation with one oracle process."""

from __future__ import annotations

import json
import os
import select
import subprocess
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SERVER = HERE / "oracle_server.py"
STARTUP_TIMEOUT = 300.0
REQUEST_TIMEOUT = 900.0


class OracleRequestError(Exception):
    """The oracle answered a request with an error (the server keeps running)."""


class OracleClient:
    """Talks JSON lines to ``oracle_server.py``."""

    def __init__(self, python: str, oracle_dir: Path, warehouse: Path, log: Path,
                 jars: tuple[Path, ...] = ()) -> None:
        self.warehouse = warehouse
        self.log = log
        self.timings: list[tuple[str, float]] = []
        env = dict(os.environ, FLOE_ORACLE_DIR=str(oracle_dir), PYTHONUNBUFFERED="1")
        with open(log, "ab") as logf:
            self.proc = subprocess.Popen(
                [python, str(SERVER), "--warehouse", str(warehouse), "--log", str(log),
                 *(a for jar in jars for a in ("--jar", str(jar)))],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=logf,
                env=env,
                cwd=str(REPO),
            )
        hello = self._read(STARTUP_TIMEOUT)
        if not hello.get("ready"):
            self.close()
            raise RuntimeError(
                f"oracle server failed to start: {hello.get('error')} (log: {log})\n"
                f"{hello.get('traceback', '')}"
            )
        self.startup = float(hello.get("startup", 0.0))

    def _read(self, timeout: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            raise RuntimeError(f"oracle server gave no answer in {timeout:.0f} s (log: {self.log})")
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.poll()
            raise RuntimeError(f"oracle server exited (code {code}); see {self.log}")
        result: dict[str, Any] = json.loads(line)
        return result

    def request(self, op: str, **kw: Any) -> Any:
        if self.proc.poll() is not None:
            raise RuntimeError(f"oracle server is not running; see {self.log}")
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"op": op, **kw}) + "\n").encode())
        self.proc.stdin.flush()
        resp = self._read(REQUEST_TIMEOUT)
        self.timings.append((op, float(resp.get("elapsed", 0.0))))
        if "error" in resp:
            raise OracleRequestError(f"{resp['error']}\n{resp.get('traceback', '')}")
        return resp["result"]

    # convenience wrappers -------------------------------------------------------------
    def sql(self, statements: str | list[str], *, all: bool = False) -> Any:
        return self.request("sql", sql=statements, all=all)

    def add_catalog(self, name: str, warehouse: Path) -> Any:
        return self.request("catalog", name=name, warehouse=str(warehouse))

    def add_rest_catalog(self, name: str, uri: str, warehouse: str, **properties: str) -> Any:
        """Iceberg Java's ``RESTCatalog`` at ``uri`` as Spark catalog ``name``; ``properties``
        such as ``token`` or ``credential`` (``_`` in a keyword stands for ``-``)."""
        props = {k.replace("_", "-"): v for k, v in properties.items()}
        return self.request("catalog", name=name, type="rest", warehouse=warehouse,
                            properties={"uri": uri, **props})

    def java_class_missing(self, name: str) -> str | None:
        """None when the JVM loads class ``name`` (``a/b/C``), else Java's error."""
        result: str | None = self.request("java_class", name=name)
        return result

    def equality_delete(self, table: str, column: str, values: list[Any], **kw: Any) -> Any:
        return self.request("equality_delete", table=table, column=column, values=values, **kw)

    def pyiceberg(self, metadata: str | Path, **kw: Any) -> Any:
        return self.request("pyiceberg_scan", metadata=str(metadata), **kw)

    def duckdb(self, sql: str) -> Any:
        return self.request("duckdb", sql=sql)

    def read(self, table: str, options: dict[str, Any]) -> Any:
        """Rows of ``spark.read.options(...).table(table)`` (e.g. incremental reads)."""
        return self.request("read", table=table, options=options)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(b'{"op": "shutdown"}\n')
                self.proc.stdin.flush()
                self.proc.stdin.close()
                self.proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
