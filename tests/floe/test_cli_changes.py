"""The floe commands that change tables (rollback, set-current, cherry-pick, branch, tag,
evolve, delete, overwrite), run as real processes: each is one commit, and every bad input is a
one-line error with a non-zero exit that leaves the table's metadata and data folder as they
were."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from floe.catalog.filesystem import directory_table
from floe.cli import main
from floe.scan.readers import plan_to_table
from floe.scan import plan_files

FLOE = [sys.executable, "-m", "floe.cli"]


def floe(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    run = subprocess.run([*FLOE, *args], capture_output=True, text=True, timeout=120)
    if ok:
        assert run.returncode == 0, run.stderr
    return run


def setup(*args: str) -> None:
    """Set-up steps run in-process (the command under test runs as a real process)."""
    assert main(list(args)) == 0


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and modification time."""
    out = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            p = Path(dirpath) / n
            st = p.stat()
            out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


def ids(table_dir: Path, **kw: object) -> list[int]:
    t = directory_table(str(table_dir))
    plan = plan_files(t.io, t.metadata, **kw)  # type: ignore[arg-type]
    return sorted(plan_to_table(t.io, plan).column("id").to_pylist())


@pytest.fixture(scope="module")
def parquet(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("files")
    files = {}
    for name, values in {"a": [1, 2, 3], "b": [10, 11], "c": [20]}.items():
        files[name] = d / f"{name}.parquet"
        pq.write_table(pa.table({"id": pa.array(values, pa.int64()),
                                 "x": pa.array([float(v) for v in values], pa.float64()),
                                 "s": [f"s{v % 2}" for v in values]}), files[name])
    return files


def make(root: Path, parquet: dict[str, Path], version: int = 2,
         partition: str | None = "s") -> tuple[Path, list[int]]:
    table = root / f"t{version}"
    args = ["create", str(table), "--schema-from", str(parquet["a"]),
            "--format-version", str(version)]
    if partition:
        args += ["--partition-by", partition]
    setup(*args)
    for name in ("a", "b", "c"):
        setup("append", str(table), str(parquet[name]))
    t = directory_table(str(table))
    return table, [s.snapshot_id for s in t.snapshots()]


def test_snapshot_management_commands(tmp_path: Path, parquet: dict[str, Path]) -> None:
    table, (s1, s2, s3) = make(tmp_path, parquet)
    out = floe("rollback", str(table), "--to-snapshot", str(s1)).stdout.strip()
    assert out.endswith(".metadata.json") and Path(out).exists()
    assert ids(table) == [1, 2, 3]
    floe("set-current", str(table), str(s3))
    assert ids(table) == [1, 2, 3, 10, 11, 20]
    floe("branch", str(table), "dev", "--snapshot", str(s1), "--min-snapshots-to-keep", "2")
    floe("tag", str(table), "v1", "--snapshot", str(s2), "--max-ref-age-ms", "86400000")
    refs = {r["name"]: r for r in json.loads(floe("describe", str(table), "--json").stdout)
            ["refs"]}
    assert refs["dev"]["snapshot_id"] == s1 and refs["dev"]["min_snapshots_to_keep"] == 2
    assert refs["v1"]["type"] == "tag" and refs["v1"]["max_ref_age_ms"] == 86400000
    floe("branch", str(table), "dev", "--fast-forward", "main")
    assert ids(table, ref="dev") == ids(table)
    floe("branch", str(table), "dev", "--rename", "feature")
    floe("tag", str(table), "v1", "--remove")
    refs = json.loads(floe("describe", str(table), "--json").stdout)["refs"]
    assert sorted(r["name"] for r in refs) == ["feature", "main"]
    floe("rollback", str(table), "--to-snapshot", str(s1))
    floe("cherry-pick", str(table), str(s2))  # an append, on a main that moved: a new snapshot
    assert ids(table) == [1, 2, 3, 10, 11]


def test_evolve_delete_overwrite_commands(tmp_path: Path, parquet: dict[str, Path]) -> None:
    table, _ = make(tmp_path, parquet)
    floe("evolve", str(table), "add-column", "note", "string", "rename-column", "x", "amount",
         "add-partition-field", "bucket(4, id)")
    doc = json.loads(floe("describe", str(table), "--json").stdout)
    names = [f["name"] for f in doc["schemas"][-1]["fields"]]
    assert names == ["id", "amount", "s", "note"]
    assert [f["name"] for f in doc["partition_specs"][-1]["fields"]] == ["s", "id_bucket_4"]
    floe("delete", str(table), "--filter", "id = 2", "--mode", "merge-on-read")
    assert ids(table) == [1, 3, 10, 11, 20]
    dry = json.loads(floe("delete", str(table), "--filter", "id >= 10", "--dry-run",
                          "--json").stdout)
    assert dry["mode"] == "copy-on-write" and dry["partial_files"] + dry["removed_files"]
    floe("delete", str(table), "--filter", "id >= 10")
    assert ids(table) == [1, 3]


def test_overwrite_commands(tmp_path: Path, parquet: dict[str, Path]) -> None:
    table, _ = make(tmp_path, parquet)
    floe("overwrite", str(table), str(parquet["b"]), "--filter", "id >= 10")
    assert ids(table) == [1, 2, 3, 10, 11]
    floe("overwrite", str(table), str(parquet["c"]), "--dynamic")  # partition s0
    assert ids(table) == [1, 3, 11, 20]


# Each: (format version, partition spec, argv after "floe", the error's beginning)
BAD = [
    (2, "s", ["rollback", "{t}", "--to-snapshot", "42"], "cannot roll back: snapshot 42"),
    (2, "s", ["set-current", "{t}", "42"], "cannot set the current snapshot: snapshot 42"),
    (2, "s", ["rollback", "{t}", "--to-snapshot", "{dev}"],
     "cannot roll back to snapshot {dev}: it is not an ancestor"),
    (2, "s", ["cherry-pick", "{t}", "{delete}"], "cannot cherry-pick snapshot {delete} (delete)"),
    (2, "s", ["evolve", "{t}", "drop-column", "s"],
     "Cannot drop column s: it is the source of partition field 's'"),
    (2, None, ["evolve", "{t}", "require-column", "id", "set-identifier-fields", "id",
               "--allow-incompatible"], None),
    (2, "s", ["evolve", "{t}", "promote", "id", "int"], "Cannot change column type: id: long"),
    (2, "s", ["evolve", "{t}", "promote", "s", "int"], "Cannot change column type: s: string"),
    (2, "s", ["evolve", "{t}", "add-column", "req", "long", "--required"], "Incompatible change"),
    (2, "s", ["evolve", "{t}", "add-partition-field", "bucket(4, idd)"],
     "unknown column 'idd'; did you mean 'id'?"),
    (2, "s", ["evolve", "{t}", "add-partition-field", "bucket(4, x)"],
     "transform bucket[4] cannot be applied to 'x' of type double"),
    (1, "s", ["delete", "{t}", "--filter", "id = 1", "--mode", "merge-on-read"],
     "merge-on-read"),
    (2, "s", ["delete", "{t}", "--filter", "idd = 1"], "unknown column 'idd'; did you mean"),
    (2, "s", ["evolve", "{t}", "frobnicate", "x"], "unknown change 'frobnicate'"),
]


@pytest.mark.parametrize(("version", "spec", "argv", "error"), BAD,
                         ids=[" ".join(b[2][:1] + b[2][2:4]) for b in BAD])
def test_bad_input_is_one_line_and_changes_nothing(tmp_path: Path, parquet: dict[str, Path],
                                                   version: int, spec: str | None,
                                                   argv: list[str], error: str | None) -> None:
    table, (s1, s2, _) = make(tmp_path, parquet, version, spec)
    subs = {"t": str(table)}
    if "{dev}" in " ".join(argv):  # a snapshot on another branch: not an ancestor of main
        setup("branch", str(table), "dev")
        setup("append", str(table), str(parquet["c"]))  # on main, so dev stays behind ...
        t = directory_table(str(table))
        t.append(pa.table({"id": pa.array([99], pa.int64()), "x": [9.0], "s": ["s1"]}),
                 branch="dev")
        subs["dev"] = str(t.metadata.refs["dev"].snapshot_id)
    if "{delete}" in " ".join(argv):  # a delete committed on a branch, main moved since
        setup("branch", str(table), "dev2")
        t = directory_table(str(table))
        t.delete_files([plan_files(t.io, t.metadata, row_filter="id = 20").tasks[0].file_path],
                       branch="dev2")
        setup("append", str(table), str(parquet["c"]))
        subs["delete"] = str(t.refresh().metadata.refs["dev2"].snapshot_id)
    if error is None:  # an identifier field, then dropping it
        setup(*[a.format(**subs) for a in argv])
        argv, error = ["evolve", "{t}", "drop-column", "id"], "Cannot delete identifier field"
    before = tree(table)
    run = floe(*[a.format(**subs) for a in argv], ok=False)
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("floe: ")
    assert error.format(**subs) in lines[0]
    assert run.stdout == ""
    assert tree(table) == before
