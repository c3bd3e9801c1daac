"""Remove orphan files: files under a table's location that its metadata does not reference
(Java ``DeleteOrphanFilesSparkAction`` and Spark's ``remove_orphan_files`` procedure).

What counts as referenced (Java ``validFileIdentDS``): the live data and delete files of every
manifest of every snapshot in the metadata, those manifests, every snapshot's manifest list,
the current metadata file and those of the metadata log, the version hint, and the statistics
and partition-statistics files. A file only a DELETED manifest entry names is an orphan (an
earlier expiration that did not finish its cleanup leaves such files; this finds them).

What is listed (Java ``FileSystemWalker`` + ``PartitionAwareHiddenPathFilter``): regular files
under the location, except those whose name, or the name of a directory on the way, starts
with ``.`` or ``_`` (Hadoop's hidden files: ``.crc`` checksum companions, ``_SUCCESS``,
in-progress temporary files) unless it starts with ``<name>=`` of a partition field whose name
starts with one of those characters. So a ``.crc`` file is never an orphan, as in Java; when an
orphan is deleted its ``.crc`` companion goes with it (as Hadoop deletes both). Unlike Hadoop's
walker, symbolic links are never followed nor listed: nothing outside the location is touched,
and a file is deleted only after checking that its directory still resolves inside it.

Only files modified before ``older_than_ms`` are candidates (default: 3 days ago). A cutoff less
than 24 hours ago is refused unless ``force`` (the procedure's check: a file written by an
ongoing commit is not referenced yet).

Paths are compared as Java's ``FileURI`` does: by path, after mapping schemes through
``equal_schemes`` (``s3a`` and ``s3n`` are ``s3`` by default) and authorities through
``equal_authorities``; a referenced location without a scheme (or authority) matches any. Listed
files are local (scheme ``file``, no authority). A listed file whose path a referenced location
has only with another scheme or authority is a prefix mismatch: an error by default
(``prefix_mismatch_mode="error"``), kept with ``"ignore"``, deleted with ``"delete"``. Percent
escapes of ``file:`` URIs are decoded as floe's FileIO reads them (Java compares them raw).
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from floe.errors import InvalidArgument, ValidationError
from floe.io import FileIO, is_local, local_path
from floe.maintenance import ProgressCallback, report, utc_text
from floe.reachable import (
    ManifestLists,
    delete_files,
    delete_in_phases,
    reachable_files,
)
from floe.properties import GC_ENABLED, GC_ENABLED_DEFAULT, bool_property

if TYPE_CHECKING:
    from floe.metadata import TableMetadata
    from floe.table.table import Table

__all__ = ["OrphanResult", "PREFIX_MISMATCH_MODES", "check_orphan_removal",
           "remove_orphan_files"]

log = logging.getLogger(__name__)

DAY_MS = 86_400_000
#: Java ``DeleteOrphanFilesSparkAction``: files younger than this are never orphans by default.
DEFAULT_OLDER_THAN_MS = 3 * DAY_MS
#: The procedure refuses a shorter interval (``validateInterval``).
MIN_OLDER_THAN_MS = DAY_MS
PREFIX_MISMATCH_MODES = ("error", "ignore", "delete")
#: Java ``EQUAL_SCHEMES_DEFAULT``.
EQUAL_SCHEMES_DEFAULT = {"s3n": "s3", "s3a": "s3"}
DELETE_BATCH = 100
_LIST_REPORT_EVERY = 10_000
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):(.*)$", re.DOTALL)


@dataclass(frozen=True)
class OrphanResult:
    """What an orphan-file removal found and deleted (for a dry run: would delete)."""

    location: str
    older_than_ms: int
    dry_run: bool
    orphan_files: tuple[str, ...] = ()
    listed_files: int = 0
    candidate_files: int = 0
    ignored_prefix_mismatches: tuple[str, ...] = ()
    deleted_files: int = 0
    failed: tuple[tuple[str, str], ...] = ()
    #: Why there is no orphan, in a sentence; "" when there are some.
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "location": self.location,
            "older_than_ms": self.older_than_ms,
            "dry_run": self.dry_run,
            "orphan_files": list(self.orphan_files),
            "listed_files": self.listed_files,
            "candidate_files": self.candidate_files,
            "ignored_prefix_mismatches": list(self.ignored_prefix_mismatches),
            "deleted_files": self.deleted_files,
            "failed": [{"path": p, "error": e} for p, e in self.failed],
            "note": self.note,
        }



# -- comparing locations --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _URI:
    scheme: str | None
    authority: str | None
    path: str


def _flatten(mapping: Mapping[str, str] | None) -> dict[str, str]:
    """Java ``flattenMap``: ``{"s3a,s3n": "s3"}`` → one entry per comma-separated key."""
    out: dict[str, str] = {}
    for key, value in (mapping or {}).items():
        for k in key.split(","):
            out[k.strip()] = value.strip()
    return out


def _split(location: str) -> _URI:
    """scheme, authority and path of a location (Hadoop ``new Path(s).toUri()``: repeated
    slashes collapse, a trailing slash goes); ``file:`` paths are percent-decoded the way
    :func:`floe.io.local_path` reads them."""
    m = _SCHEME.match(location)
    scheme: str | None = None
    authority: str | None = None
    rest = location
    if m is not None and len(m.group(1)) > 1:
        scheme, rest = m.group(1), m.group(2)
        if rest.startswith("//"):
            authority, slash, tail = rest[2:].partition("/")
            rest = slash + tail
            authority = authority or None
        if scheme.lower() == "file":
            rest = unquote(rest)
    path = re.sub("/{2,}", "/", rest)
    if len(path) > 1:
        path = path.rstrip("/")
    return _URI(scheme, authority, path)


def _is_plain(location: str) -> bool:
    """An absolute path already in normal form (the usual way paths are written)."""
    return location[:1] == "/" and "//" not in location and location[-1:] != "/"


class _Matcher:
    """Referenced locations, indexed for matching listed files the way Java's
    ``FindOrphanFiles`` joins them: by path, then checking scheme and authority.

    A listed file is local: scheme ``file``, no authority. So a referenced location without a
    scheme and authority, or with scheme ``file`` and no authority, matches it by path alone;
    those (nearly all of them) are kept as plain path sets, the rest by path with their
    scheme and authority."""

    def __init__(self, equal_schemes: Mapping[str, str] | None,
                 equal_authorities: Mapping[str, str] | None) -> None:
        self.schemes = {**EQUAL_SCHEMES_DEFAULT, **_flatten(equal_schemes)}
        self.authorities = _flatten(equal_authorities)
        self.sets: list[frozenset[str]] = []
        self.plain: set[str] = set()
        self.by_path: dict[str, list[_URI]] = {}

    def norm(self, uri: _URI) -> _URI:
        scheme = self.schemes.get(uri.scheme, uri.scheme) if uri.scheme else uri.scheme
        authority = self.authorities.get(uri.authority, uri.authority) \
            if uri.authority is not None else None
        return _URI(scheme, authority, uri.path)

    def add_all(self, locations: frozenset[str]) -> None:
        """Index a set of referenced locations (plain paths stay in the set itself)."""
        self.sets.append(locations)
        for location in locations:
            if not _is_plain(location):
                self.add(location)

    def add(self, location: str) -> None:
        uri = _split(location)
        local_file = (uri.scheme or "").lower() == "file" and uri.authority is None
        if (uri.scheme is None and uri.authority is None) or (
                local_file and self.norm(uri).scheme == self.norm(_URI("file", None, "")).scheme):
            self.plain.add(uri.path)
            return
        uri = self.norm(uri)
        known = self.by_path.setdefault(uri.path, [])
        if uri not in known:
            known.append(uri)

    def match(self, listed: str) -> tuple[bool, list[tuple[str | None, str | None]]]:
        """(referenced, conflicts) for a listed file (a local path, or an object store's
        location): Java ``FindOrphanFiles`` per joined row, except that a file some
        referenced location matches is never an orphan."""
        if listed in self.plain or any(listed in s for s in self.sets):
            return True, []
        uri = _URI("file", None, listed) if is_local(listed) else _split(listed)
        valid = self.by_path.get(uri.path)
        if not valid:
            return False, []
        actual = self.norm(uri)
        conflicts: list[tuple[str | None, str | None]] = []
        for v in valid:
            scheme_ok = not v.scheme or v.scheme.lower() == (actual.scheme or "").lower()
            authority_ok = not v.authority or v.authority.lower() == \
                (actual.authority or "").lower()
            if scheme_ok and authority_ok:
                return True, []
            if not scheme_ok:
                conflicts.append((v.scheme, actual.scheme))
            if not authority_ok:
                conflicts.append((v.authority, actual.authority))
        return False, conflicts


# -- listing ------------------------------------------------------------------------------------


def _hidden(name: str, partition_prefixes: tuple[str, ...]) -> bool:
    if not name.startswith((".", "_")):
        return False
    return not name.startswith(partition_prefixes)


def _partition_prefixes(md: TableMetadata) -> tuple[str, ...]:
    """Java ``PartitionAwareHiddenPathFilter``: ``_x=`` directories of a partition field
    ``_x`` are not hidden."""
    return tuple(sorted({f"{f.name}=" for spec in md.partition_specs for f in spec.fields
                         if f.name.startswith((".", "_"))}))


def _walk(root: str, prefixes: tuple[str, ...]) -> Iterator[tuple[str, int]]:
    """``(relative path, mtime ms)`` of every visible regular file under ``root``; symbolic
    links (to files or directories) are neither followed nor listed."""
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            with os.scandir(os.path.join(root, rel_dir) if rel_dir else root) as it:
                entries = list(it)
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            if _hidden(entry.name, prefixes):
                continue
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(rel)
                elif entry.is_file(follow_symlinks=False):
                    yield rel, entry.stat(follow_symlinks=False).st_mtime_ns // 1_000_000
            except FileNotFoundError:
                continue


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


@dataclass
class _Listing:
    """Files old enough to be orphans, relative to ``root`` (their local directory) and
    ``base`` (the location as given)."""

    root: str
    base: str
    candidates: list[str] = field(default_factory=list)
    listed: int = 0

    def location(self, rel: str) -> str:
        return f"{self.base}/{rel}"

    def local(self, rel: str) -> str:
        return f"{self.root.rstrip(os.sep)}/{rel}"


def _walk_store(io: FileIO, location: str, prefixes: tuple[str, ...]
                ) -> Iterator[tuple[str, int]]:
    """:func:`_walk` over an object store: its listing, hidden names skipped in every path
    segment (an object store has no directories to skip instead)."""
    base = location.rstrip("/") + "/"
    for info in io.list_info(location):
        rel = info.location[len(base):]
        if any(_hidden(part, prefixes) for part in rel.split("/")):
            continue
        yield rel, info.modified_ms if info.modified_ms is not None else 0


def _list(io: FileIO, location: str, root: str, cutoff_ms: int, prefixes: tuple[str, ...],
          on_progress: ProgressCallback | None) -> _Listing:
    out = _Listing(root, location.rstrip("/"))
    walk = _walk(root, prefixes) if is_local(location) else _walk_store(io, location, prefixes)
    for rel, mtime_ms in walk:
        out.listed += 1
        if out.listed % _LIST_REPORT_EVERY == 0:
            report(on_progress, "listing files", out.listed)
        if mtime_ms < cutoff_ms:
            out.candidates.append(rel)
    report(on_progress, "listing files", out.listed, out.listed)
    return out


# -- the operation --------------------------------------------------------------------------------


def check_orphan_removal(md: TableMetadata, *, table: Any, now_ms: int,
                         older_than_ms: int | None = None, force: bool = False,
                         prefix_mismatch_mode: str = "error", location: str | None = None
                         ) -> tuple[int, str, str, str]:
    """The checks :func:`remove_orphan_files` makes before listing anything (a caller may run
    them first, e.g. before queueing a task): gc.enabled, the mode, a cutoff neither in the
    future nor (without ``force``) under 24 hours ago, a location inside the table's.
    Returns (cutoff, mode, location as given, its local directory); ValidationError, or
    InvalidArgument naming the argument."""
    if not bool_property(md, GC_ENABLED, GC_ENABLED_DEFAULT):
        raise ValidationError(
            f"cannot remove orphan files of table {table}: gc.enabled is false (deleting files "
            f"may corrupt other tables that share them)")
    mode = prefix_mismatch_mode.lower() if isinstance(prefix_mismatch_mode, str) \
        else prefix_mismatch_mode
    if mode not in PREFIX_MISMATCH_MODES:
        raise InvalidArgument("prefix_mismatch_mode",
                              f"invalid prefix_mismatch_mode {mode!r}: expected one of "
                              f"{', '.join(PREFIX_MISMATCH_MODES)}")
    cutoff = now_ms - DEFAULT_OLDER_THAN_MS if older_than_ms is None else older_than_ms
    if cutoff > now_ms:
        raise InvalidArgument(
            "older_than_ms", f"cannot remove orphan files of table {table}: older_than "
                             f"{cutoff} is in the future (now is {now_ms})")
    if now_ms - cutoff < MIN_OLDER_THAN_MS and not force:
        raise InvalidArgument(
            "older_than_ms",
            f"cannot remove orphan files of table {table} newer than 24 hours (older_than "
            f"{cutoff} is {(now_ms - cutoff) / 3_600_000:.1f} h ago): a file written by a "
            f"commit in progress is not referenced yet; pass force=True if no other writer "
            f"can be running (`floe remove-orphans --force`)")
    given, root = _root(md.location, location, table)
    return cutoff, mode, given, root


def _root(table_location: str, location: str | None, table: Any) -> tuple[str, str]:
    """(location as given, its local directory; on an object store the location itself),
    which must be the table location or inside it."""
    if not is_local(table_location):
        base = table_location.rstrip("/")
        given = (location or table_location).rstrip("/")
        if ".." in given.split("/") or not (given == base or given.startswith(base + "/")):
            raise ValidationError(
                f"cannot remove orphan files under {location}: it is not inside the location "
                f"{table_location} of table {table}")
        return location or table_location, given
    table_dir = os.path.normpath(local_path(table_location))
    if location is None:
        return table_location, table_dir
    root = os.path.normpath(local_path(location))
    if not _inside(root, table_dir):
        raise ValidationError(
            f"cannot remove orphan files under {location}: it is not inside the location "
            f"{table_location} of table {table}")
    return location, root


def remove_orphan_files(
    table: Table,
    *,
    older_than_ms: int | None = None,
    location: str | None = None,
    dry_run: bool = False,
    prefix_mismatch_mode: str = "error",
    equal_schemes: Mapping[str, str] | None = None,
    equal_authorities: Mapping[str, str] | None = None,
    force: bool = False,
    on_progress: ProgressCallback | None = None,
) -> OrphanResult:
    """Delete the files under ``location`` (default: the table location) that ``table`` does
    not reference and that were last modified before ``older_than_ms`` (module docstring).
    ``dry_run`` lists exactly what a real run deletes, deleting nothing. ``on_progress`` may
    raise :class:`floe.maintenance.Cancelled` between steps (what was deleted stays deleted;
    a re-run carries on)."""
    now_ms = int(time.time() * 1000)
    table.refresh(force=True)
    md = table.metadata
    cutoff, mode, given, root = check_orphan_removal(
        md, table=table.identifier, now_ms=now_ms, older_than_ms=older_than_ms, force=force,
        prefix_mismatch_mode=prefix_mismatch_mode, location=location)
    listing = _list(table.io, given, root, cutoff, _partition_prefixes(md), on_progress)
    result = OrphanResult(location=given, older_than_ms=cutoff, dry_run=dry_run,
                          listed_files=listing.listed, candidate_files=len(listing.candidates))
    if not listing.candidates:
        return _replace(result, note=(
            f"no orphan files: none of the {listing.listed} file(s) under {given} was last "
            f"modified before the cutoff {utc_text(cutoff)}"))
    orphans, ignored = _find_orphans(table, md, listing, mode, equal_schemes,
                                     equal_authorities, on_progress)
    result = _replace(result, orphan_files=tuple(p for p, _ in orphans),
                      ignored_prefix_mismatches=tuple(ignored))
    if not orphans:
        kept = f", {len(ignored)} kept for a prefix mismatch" if ignored else ""
        result = _replace(result, note=(
            f"no orphan files: the table's metadata references every one of the "
            f"{len(listing.candidates)} file(s) under {given} older than the cutoff "
            f"{utc_text(cutoff)}{kept}"))
    if dry_run:
        return result
    return _delete(table, result, orphans, root, on_progress)


def _find_orphans(
    table: Table, md: TableMetadata, listing: _Listing, mode: str,
    equal_schemes: Mapping[str, str] | None, equal_authorities: Mapping[str, str] | None,
    on_progress: ProgressCallback | None,
) -> tuple[list[tuple[str, str]], list[str]]:
    report(on_progress, "reading metadata")
    matcher = _Matcher(equal_schemes, equal_authorities)

    def progress(done: int, total: int) -> None:
        if done % 100 == 0 or done == total:
            report(on_progress, "reading manifests", done, total)

    reachable = reachable_files(table.io, md, metadata_location=table.metadata_location,
                                lists=ManifestLists(table.io), on_manifest=progress)
    for paths in (reachable.content_files, reachable.manifests, reachable.manifest_lists,
                  reachable.statistics_files, reachable.metadata_files):
        matcher.add_all(paths)
    orphans: list[tuple[str, str]] = []
    ignored: list[str] = []
    conflicts: set[tuple[str | None, str | None]] = set()
    for rel in listing.candidates:
        path = listing.local(rel)
        referenced, mismatches = matcher.match(
            path if _is_plain(path) or not is_local(path) else _split(path).path)
        if referenced:
            continue
        if not mismatches or mode == "delete":
            orphans.append((listing.location(rel), path))
        elif mode == "ignore":
            ignored.append(listing.location(rel))
        else:
            conflicts.update(mismatches)
    if conflicts:
        pairs = ", ".join(f"{a or '(none)'} vs {b or '(none)'}"
                          for a, b in sorted(conflicts, key=str))
        raise ValidationError(
            f"cannot tell whether some files of table {table.identifier} are orphans: the "
            f"metadata references them with another scheme or authority ({pairs}); declare "
            f"equal ones with equal_schemes / equal_authorities, or pass "
            f"prefix_mismatch_mode='ignore' (keep them) or 'delete' (only if they are truly "
            f"different files)")
    orphans.sort()
    ignored.sort()
    return orphans, ignored


def _replace(result: OrphanResult, **changes: Any) -> OrphanResult:
    import dataclasses

    return dataclasses.replace(result, **changes)


def _delete(table: Table, result: OrphanResult, orphans: list[tuple[str, str]], root: str,
            on_progress: ProgressCallback | None) -> OrphanResult:
    real_root = os.path.realpath(root)
    local = dict(orphans)

    def delete(chunk: Sequence[str]) -> list[tuple[str, str]]:
        # on a disk, a directory swapped for a symbolic link since the listing must not lead
        # out (an object store has neither)
        escaped = [x for x in chunk if is_local(x) and (
            not _inside(os.path.realpath(os.path.dirname(local[x])), real_root)
            or os.path.islink(local[x]))]
        return [(x, f"{x}: no longer inside the table location") for x in escaped] + \
            delete_files(table.io, [x for x in chunk if x not in escaped])

    def progress(done: int, total: int) -> None:
        report(on_progress, "deleting files", done, total)

    deleted, failed = delete_in_phases([[loc for loc, _ in orphans]], delete, progress,
                                       DELETE_BATCH)
    return _replace(result, deleted_files=deleted, failed=tuple(failed))
