"""The floe command on tables floe wrote (Java-written tables: tests/interop)."""

import json
import os
import subprocess
import sys

import pytest

from floe.cli import main
from floe.demo import create_demo_warehouse


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    root = tmp_path_factory.mktemp("wh")
    create_demo_warehouse(str(root))
    return root


def run_json(capsys, *args):
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_describe(warehouse, capsys):
    doc = run_json(capsys, "describe", str(warehouse / "web" / "events"))
    assert doc["format_version"] == 2
    assert doc["metadata_location"].endswith("metadata/v7.metadata.json")
    assert doc["snapshot_count"] == 6
    assert [f["name"] for f in doc["schemas"][0]["fields"]][:2] == ["event_id", "user_id"]
    spec = doc["partition_specs"][0]["fields"]
    assert [(f["name"], f["transform"]) for f in spec] == [("ts_day", "day"), ("user_id_bucket", "bucket[4]")]
    assert doc["refs"] == [{"name": "main", "type": "branch", "snapshot_id": doc["current_snapshot_id"],
                            "min_snapshots_to_keep": None, "max_snapshot_age_ms": None, "max_ref_age_ms": None}]


def test_describe_a_metadata_file(warehouse, capsys):
    path = warehouse / "sales" / "orders" / "metadata" / "v2.metadata.json"
    doc = run_json(capsys, "describe", str(path))
    assert doc["format_version"] == 1 and doc["snapshot_count"] == 1


def test_snapshots_manifests_files_agree(warehouse, capsys):
    table = str(warehouse / "web" / "events")
    snaps = run_json(capsys, "snapshots", table)
    assert len(snaps) == 6 and snaps[0]["parent_id"] is None
    assert [s["sequence_number"] for s in snaps] == [1, 2, 3, 4, 5, 6]
    assert all(s["operation"] == "append" for s in snaps)
    current = snaps[-1]
    manifests = run_json(capsys, "manifests", table)
    assert len(manifests) == 6
    assert sum(m["added_files_count"] + m["existing_files_count"] for m in manifests) == int(
        current["summary"]["total-data-files"])
    files = run_json(capsys, "files", table)
    assert len(files) == int(current["summary"]["total-data-files"])
    assert sum(f["record_count"] for f in files) == int(current["summary"]["total-records"])
    first = run_json(capsys, "files", table, "--snapshot", str(snaps[0]["snapshot_id"]))
    assert sum(f["record_count"] for f in first) == int(snaps[0]["summary"]["total-records"])
    assert all(f["sequence_number"] == 1 for f in first)


def test_text_output(warehouse, capsys):
    assert main(["snapshots", str(warehouse / "iot" / "readings")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["snapshot_id", "parent_id", "sequence_number"] and len(out) == 4


@pytest.mark.parametrize(
    "args, message",
    [
        (["describe", "/nonexistent/table"], "/nonexistent/table"),
        (["manifests", "{table}", "--snapshot", "42"], "snapshot 42 does not exist"),
    ],
)
def test_errors_are_one_line_on_stderr(warehouse, args, message):
    args = [a.format(table=warehouse / "web" / "events") for a in args]
    proc = subprocess.run([sys.executable, "-m", "floe.cli", *args], capture_output=True, text=True)
    assert proc.returncode != 0 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr


def test_corrupt_metadata_names_the_file(tmp_path):
    meta = tmp_path / "t" / "metadata"
    meta.mkdir(parents=True)
    (meta / "v1.metadata.json").write_text('{"format-version": 2, "table-uuid": ')
    proc = subprocess.run([sys.executable, "-m", "floe.cli", "describe", str(tmp_path / "t")],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert str(meta / "v1.metadata.json") in proc.stderr and "Traceback" not in proc.stderr


def test_unknown_format_version(tmp_path):
    path = tmp_path / "v1.metadata.json"
    path.write_text(json.dumps({"format-version": 4, "table-uuid": "x", "location": "/x"}))
    proc = subprocess.run([sys.executable, "-m", "floe.cli", "describe", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "format version 4" in proc.stderr
    assert os.path.exists(path)


def test_command_modules_name_the_module_of_every_command():
    """floe.cli.COMMAND_MODULES (what a run imports for its command) is exactly what the
    command modules register."""
    import argparse
    import importlib
    import pkgutil

    import floe.cli
    from floe.cli import COMMAND_MODULES

    registered = {}
    for info in pkgutil.iter_modules(floe.cli.__path__):
        if info.name == "__main__":  # runs the program when imported
            continue
        module = importlib.import_module(f"floe.cli.{info.name}")
        if hasattr(module, "register"):
            sub = argparse.ArgumentParser().add_subparsers()
            module.register(sub)
            registered.update(dict.fromkeys(sub.choices, module.__name__))
    assert registered == COMMAND_MODULES


@pytest.mark.parametrize("command, absent", [
    (["plan", "{t}", "--json"], ["floe.cli.write", "floe.cli.evolve", "floe.cli.maintenance",
                                 "floe.cli.manage", "floe.inspect", "fastavro"]),
    (["files", "{t}", "--json"], ["floe.cli.write", "floe.cli.evolve", "floe.cli.scan"]),
    # a plan deciding files over the columns calls Arrow's kernels without pyarrow.compute
    # (floe.arrow_compute), reads no catalog configuration, starts no worker processes
    (["plan", "{t}", "--json", "--filter", "event_id = 5 AND user_id = 3"],
     ["pyarrow.compute", "pyarrow.acero", "pyarrow.dataset", "multiprocessing",
      "floe.catalog.rest", "floe.catalog.config", "tomllib", "dateutil",
      # what only writing, a remote store, an error message or a manifest cache to fill
      # needs (conftest turns the cache off): explanations are held in memory
      "logging", "concurrent.futures", "gzip", "difflib", "tempfile"]),
])
def test_a_command_loads_only_its_own_module(warehouse, command, absent):
    """`floe plan` starts without importing what other commands need (its whole-process
    time is what a user waits for), and still answers."""
    table = str(warehouse / "web" / "events")
    argv = [a.format(t=table) for a in command]
    code = ("import sys, io, contextlib\n"
            "from floe.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert main({argv!r}) == 0\n"
            f"print([m for m in {absent!r} if m in sys.modules])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_help_and_a_mistyped_command_still_list_every_command(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert all(name in text for name in ("plan", "append", "evolve", "expire", "describe"))
    with pytest.raises(SystemExit):
        main(["plna", "x"])
    assert "invalid choice: 'plna'" in capsys.readouterr().err


def test_a_read_only_program_flushes_its_output_and_its_cache_before_it_exits(
        warehouse, tmp_path, capsys):
    """`floe plan` as a program ends with os._exit: what it printed is all there (a pipe
    is block-buffered), the manifest cache it filled is complete (no temporary file left),
    and a reader that is gone ends it quietly."""
    table = str(warehouse / "web" / "events")
    env = {**os.environ, "FLOE_MANIFEST_CACHE": str(tmp_path / "cache")}
    argv = [sys.executable, "-m", "floe.cli", "plan", table, "--json"]
    out = subprocess.run(argv, capture_output=True, env=env, check=True)
    assert main(["plan", table, "--json"]) == 0
    assert out.stdout.decode() == capsys.readouterr().out and out.stderr == b""
    cached = sorted(p.name for p in (tmp_path / "cache").rglob("*") if p.is_file())
    assert cached and all(n.endswith(".arrow") and not n.startswith(".tmp-") for n in cached)
    # the reader is gone before the first byte: every write and the final flush meet a
    # broken pipe (EPIPE), which ends the program quietly
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        gone = subprocess.run(argv, stdout=write_end, stderr=subprocess.PIPE, env=env)
    finally:
        os.close(write_end)
    assert gone.returncode == 0 and gone.stderr == b""
    # a failing read-only command keeps its exit code and message
    bad = subprocess.run([*argv[:4], str(tmp_path / "nothing"), "--json"], capture_output=True,
                         env=env)
    assert bad.returncode == 1 and bad.stderr.startswith(b"floe: ")
