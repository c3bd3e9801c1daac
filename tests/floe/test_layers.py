"""Imports inside floe point one way: no module imports a layer above its own (the one
exception: a catalog makes tables and a table commits through its catalog). FileIO knows
nothing of planning, catalogs nothing of maintenance."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

FLOE = Path(__file__).resolve().parents[2] / "floe"

#: floe's top-level modules and packages, lowest first; a module may import its own layer
#: and the layers below.
LAYERS = [
    {"errors", "types", "clock", "properties", "bulk", "stats", "cache", "arrow_compute"},
    {"schema", "conversions", "transforms", "snapshots", "avro", "avro_schemas"},
    {"partitioning", "sorting", "name_mapping"},
    {"metadata", "manifest", "history", "avro_native"},  # avro_native: the C decoder's glue
    {"io"},  # FileIO and the file formats
    {"expressions"},
    {"scan", "reachable"},  # planning and reading; the files snapshots reach
    {"table", "catalog"},
    {"inspect", "diff", "health", "live_rows"},
    {"maintenance", "partition_stats", "demo"},
    {"rest_server"},  # the REST catalog protocol served from floe's catalogs
    {"spark", "cli"},
]
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}
MUTUAL = {frozenset({"table", "catalog"})}


def _top(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "floe" else None


def _imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("floe"):
            names = ([f"floe.{a.name}" for a in node.names] if node.module == "floe"
                     else [node.module])
            out += [(node.lineno, n) for n in names]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.startswith("floe.")]
    return out


MODULES = sorted(FLOE.rglob("*.py"))


def test_every_top_level_module_has_a_layer() -> None:
    tops = {_top(".".join(p.relative_to(FLOE.parent).with_suffix("").parts))
            for p in MODULES} - {None, "__init__"}
    assert tops - set(RANK) == set()


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(FLOE.parent)))
def test_imports_point_down(path: Path) -> None:
    own = _top(".".join(path.relative_to(FLOE.parent).with_suffix("").parts))
    upward = [f"line {line}: {own} imports {target}"
              for line, target in _imports(path)
              if own in RANK and (dst := _top(target)) is not None and dst != own
              and frozenset({own, dst}) not in MUTUAL and RANK.get(dst, -1) > RANK[own]]
    assert upward == []


#: Where floe.manifest's decoder is called: itself, and the one entry point for reading
#: manifest entries (floe.scan.manifests and the scanner behind it).
MANIFEST_READERS = {"floe/manifest.py", "floe/scan/manifests.py", "floe/scan/manifest_scan.py"}


def test_manifest_entries_are_read_through_one_entry_point() -> None:
    root = FLOE.parent
    callers = sorted(
        str(p.relative_to(root)) for d in ("floe", "explorer", "api")
        for p in (root / d).rglob("*.py")
        if "read_manifest(" in p.read_text(encoding="utf-8")
        and str(p.relative_to(root)) not in MANIFEST_READERS)
    assert callers == []
