"""The ``floe`` command on a table in a bucket (SeaweedFS, signatures checked), named by its
location and reached with the standard AWS environment (the endpoint, keys and region every
AWS tool reads): every kind of command, as a real process. Each change is one commit; the
dry runs list what the real runs then do; a wrong secret is one line naming the location."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.object_store import SeaweedFS

pytestmark = pytest.mark.objectstore

Floe = Callable[..., "subprocess.CompletedProcess[str]"]


@pytest.fixture
def run(seaweedfs: SeaweedFS) -> Floe:
    env = {**os.environ, "AWS_ENDPOINT_URL": seaweedfs.endpoint,
           "AWS_ACCESS_KEY_ID": seaweedfs.access_key,
           "AWS_SECRET_ACCESS_KEY": seaweedfs.secret_key, "AWS_REGION": seaweedfs.region,
           "FLOE_MANIFEST_CACHE": "off"}

    def floe(*args: str, ok: bool = True, **extra: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, "-m", "floe.cli", *args], capture_output=True,
                              text=True, timeout=120, env={**env, **extra})
        if ok:
            assert done.returncode == 0, done.stderr
        return done

    return floe


def test_every_kind_of_command_on_a_table_in_a_bucket(run: Floe, seaweedfs: SeaweedFS,
                                                       tmp_path: Path) -> None:
    floe = run
    table = f"s3://{seaweedfs.bucket}/cli-{uuid.uuid4().hex[:8]}/events"
    rows = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": pa.array(range(20), pa.int64()),
                             "kind": [("a", "b")[i % 2] for i in range(20)]}), rows)
    more = tmp_path / "more.parquet"
    pq.write_table(pa.table({"id": pa.array(range(20, 30), pa.int64()),
                             "kind": ["a"] * 10}), more)
    floe("create", table, "--schema-from", str(rows), "--partition-by", "kind")
    floe("append", table, str(rows))
    floe("append", table, str(more))
    floe("delete", table, "--filter", "id < 3", "--mode", "merge-on-read")
    floe("evolve", table, "add-column", "note", "string")
    described = json.loads(floe("describe", table, "--json").stdout)
    assert described["location"] == table
    snapshots = json.loads(floe("snapshots", table, "--json").stdout)
    assert [s["operation"] for s in snapshots] == ["append", "append", "delete"]
    assert json.loads(floe("manifests", table, "--json").stdout)
    files = json.loads(floe("files", table, "--json").stdout)
    assert {f["content"] for f in files} == {"data", "position_deletes"}
    assert all(f["file_path"].startswith(table + "/") for f in files)
    plan = json.loads(floe("plan", table, "--filter", "kind = 'b'", "--json").stdout)
    assert plan["funnel"]["tasks"] >= 1
    out = floe("scan", table, "--filter", "id >= 25", "--output", "-").stdout
    assert sorted(json.loads(line)["id"] for line in out.splitlines()) == [25, 26, 27, 28, 29]

    dry = json.loads(floe("compact", table, "--dry-run", "--json",
                          "--option", "min-input-files=2").stdout)
    assert dry["dry_run"] and dry["groups"]
    floe("compact", table, "--option", "min-input-files=2")
    later = int(time.time() * 1000) + 1
    expire_dry = json.loads(floe("expire", table, "--older-than", str(later), "--retain-last",
                                 "1", "--dry-run", "--json").stdout)
    expired = json.loads(floe("expire", table, "--older-than", str(later), "--retain-last",
                              "1", "--json").stdout)
    assert sorted(expired["expired_snapshot_ids"]) == sorted(
        expire_dry["expired_snapshot_ids"]) and expired["failed"] == []
    orphans = json.loads(floe("remove-orphans", table, "--older-than", str(later),
                              "--dry-run", "--json", "--force").stdout)
    assert orphans["orphan_files"] == []  # expiry deleted what it expired, nothing stray
    out = floe("scan", table, "--output", "-").stdout
    assert sorted(json.loads(line)["id"] for line in out.splitlines()) == list(range(3, 30))


def test_a_wrong_secret_is_one_line_naming_the_location(run: Floe, seaweedfs: SeaweedFS
                                                        ) -> None:
    floe = run
    secret = "wrong-" + uuid.uuid4().hex
    table = f"s3://{seaweedfs.bucket}/nowhere/t"
    done = floe("describe", table, ok=False, AWS_SECRET_ACCESS_KEY=secret)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and table.split("/t")[0] in lines[0], done.stderr
    assert secret not in done.stderr
