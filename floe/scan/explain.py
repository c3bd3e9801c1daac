"""Explaining a scan plan: every manifest and file, kept or pruned, by which stage and why.

Stages, in planning order: ``manifest-content`` (a manifest with no live files),
``partition-summary`` (the manifest list's partition field summaries), ``partition`` (a
file's partition tuple against the filter projected through its spec), ``metrics`` (a
file's column bounds and counts). Reasons come from the evaluators' explain variants.

The JSON form (:func:`plan_to_json`) is what ``floe plan --json`` prints and what the
explorer's plan page reads; keys are snake_case.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from floe.avro_native import extension
from floe.bulk import LazyList
from floe.manifest import file_content_name
from floe.scan.delete_index import DeleteMatch

if TYPE_CHECKING:
    import pyarrow as pa

    from floe.scan.planning import FileScanTask, PlanStream, ScanPlan, TaskBlock

__all__ = ["DecidedDeletes", "Funnel", "FileDecision", "KeptFiles", "ManifestDecision",
           "PlanExplain", "plan_to_json", "write_plan_json", "encode_compact", "tasks_json"]


@dataclass(slots=True)
class Funnel:
    """Counts at each planning stage. ``data_files_in_snapshot`` comes from the manifest
    list's counts (None counts as 0: v1 lists may lack them); ``data_files_total`` counts
    the live files of the manifests that were opened."""

    manifests_total: int = 0
    manifests_after_content: int = 0
    manifests_after_summaries: int = 0
    data_files_in_snapshot: int = 0
    data_files_total: int = 0
    data_files_after_partition: int = 0
    data_files_after_metrics: int = 0
    delete_manifests_total: int = 0
    delete_manifests_kept: int = 0
    delete_files_total: int = 0
    delete_files_matched: int = 0
    tasks: int = 0

    def to_json(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in self.__slots__}


@dataclass(slots=True)
class FileDecision:
    path: str
    content: str
    kept: bool
    stage: str | None
    reason: str
    delete_files: list[DeleteMatch] = field(default_factory=list)
    #: A kept data file's residual (its task's; not part of the JSON document).
    residual: Any = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "content": self.content, "kept": self.kept,
                               "stage": self.stage, "reason": self.reason}
        if self.content == "data" and self.kept:
            out["delete_files"] = _matches_json(self.delete_files)
        return out


def _matches_json(matches: Sequence[DeleteMatch]) -> list[dict[str, Any]]:
    return [{"path": d.delete_path, "content": d.content, "sequence_number": d.sequence_number,
             "applied": d.applied, "reason": d.reason} for d in matches]


class JsonTexts:
    """A column of :func:`_json_rows` already written as JSON, one text per row."""

    __slots__ = ("texts",)

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts


def _json_lists(n: int, lists: dict[int, str]) -> JsonTexts | list[Any]:
    """A column of ``n`` lists, ``[]`` but at the positions ``lists`` gives the JSON text
    of: the constant ``[]`` when they are all empty."""
    if not lists:
        return []
    texts = ["[]"] * n
    for i, got in lists.items():
        texts[i] = got
    return JsonTexts(texts)


def _matches_text(matches: Sequence[DeleteMatch], tails: dict[tuple[Any, ...], str]) -> str:
    """``encode_compact(_matches_json(matches))``, the part of each object after its path
    written once per distinct value in ``tails`` (the verdicts of a plan repeat)."""
    out = []
    for d in matches:
        key = (d.content, d.sequence_number, d.applied, d.reason)
        tail = tails.get(key)
        if tail is None:
            tail = tails[key] = encode_compact(
                {"content": d.content, "sequence_number": d.sequence_number,
                 "applied": d.applied, "reason": d.reason})[1:]
        out.append('{"path":' + encode_compact(d.delete_path) + "," + tail)
    return "[" + ",".join(out) + "]"


def _texts(values: list[str]) -> JsonTexts:
    """A column of strings as JSON texts, each distinct value encoded once."""
    done: dict[str, str] = {}
    return JsonTexts([done.get(v) or done.setdefault(v, encode_compact(v)) for v in values])


class ColumnarFiles(LazyList[FileDecision]):
    """The decisions on a manifest's files, built on first read; until then
    :meth:`json_text` writes their JSON from the manifest's columns."""

    __slots__ = ()

    def json_text(self) -> str | None:
        """``encode_compact([f.to_json() for f in self])`` without the brackets, written from
        the columns while the decisions are not built (None: build them to write it)."""
        return None


class KeptFiles(ColumnarFiles):
    """The decisions on the files of a manifest a plan keeps whole
    (:class:`~floe.scan.planning.TaskBlock`): every file kept for the same reason, with the
    verdicts on the delete files that name it (``deletes``, by the file's position; deletes
    that name their data file are the only ones a kept-whole manifest can have). Built as
    :class:`FileDecision` objects on first read; :meth:`to_json` reads the paths alone."""

    __slots__ = ("block", "reason", "deletes")

    def __init__(self, block: TaskBlock, reason: str,
                 deletes: dict[int, list[DeleteMatch]] | None = None) -> None:
        super().__init__(block, len(block))
        self.block = block
        self.reason = reason
        self.deletes = deletes or {}

    def _build(self, source: TaskBlock) -> list[FileDecision]:
        got = [FileDecision(p, "data", True, None, self.reason)
               for p in source.column("file_path")]
        for i, matches in self.deletes.items():
            got[i].delete_files = matches
        return got

    def to_json(self) -> list[dict[str, Any]]:
        """What ``[f.to_json() for f in self]`` gives."""
        reason = self.reason
        out = [{"path": p, "content": "data", "kept": True, "stage": None, "reason": reason,
                "delete_files": []} for p in self.block.column("file_path")]
        for i, matches in self.deletes.items():
            out[i]["delete_files"] = _matches_json(matches)
        return out

    def json_text(self) -> str | None:
        if self.block.built:
            return None
        tails: dict[tuple[Any, ...], str] = {}
        return _json_rows([("path", self.block.arrow_column("file_path")),
                           ("content", "data"), ("kept", True), ("stage", None),
                           ("reason", self.reason),
                           ("delete_files", _json_lists(len(self.block), {
                               i: _matches_text(m, tails) for i, m in self.deletes.items()}))])

    def __repr__(self) -> str:
        return f"KeptFiles({len(self)} files: {self.reason})"


class DecidedDeletes(ColumnarFiles):
    """The decisions on the delete files of a manifest decided over its columns (by their
    partition, or with no filter): kept or pruned by partition per file (``kept``, None: all
    kept), with one reason for all (a string) or one per file. Built as
    :class:`FileDecision` objects on first read; until then its JSON is written from the
    manifest's ``file_path`` and ``content`` columns."""

    __slots__ = ("kept", "reasons")

    def __init__(self, paths: pa.Array, contents: pa.Array, reasons: str | list[str],
                 kept: list[bool] | None = None) -> None:
        super().__init__((paths, contents), len(paths))
        self.kept = kept
        self.reasons = reasons

    def _build(self, source: tuple[pa.Array, pa.Array]) -> list[FileDecision]:
        paths, contents = source
        n = len(paths)
        kept = [True] * n if self.kept is None else self.kept
        reasons = [self.reasons] * n if isinstance(self.reasons, str) else self.reasons
        return [FileDecision(p, file_content_name(c), k, None if k else "partition", r)
                for p, c, k, r in zip(paths.to_pylist(), contents.to_pylist(), kept, reasons,
                                      strict=True)]

    def json_text(self) -> str | None:
        source = self.source
        if source is None:
            return None
        paths, contents = source
        names = [file_content_name(c) for c in contents.to_pylist()]
        content: str | JsonTexts = names[0] if names else ""
        if any(n != content for n in names):
            content = _texts(names)
        kept: bool | JsonTexts = True
        stage: None | JsonTexts = None
        if self.kept is not None and not all(self.kept):
            kept = JsonTexts(["true" if k else "false" for k in self.kept])
            stage = JsonTexts(["null" if k else '"partition"' for k in self.kept])
        reasons = self.reasons
        return _json_rows([("path", paths), ("content", content), ("kept", kept),
                           ("stage", stage),
                           ("reason", reasons if isinstance(reasons, str) else _texts(reasons))])

    @property
    def kept_count(self) -> int:
        """How many of the files are kept (read without building the decisions)."""
        return len(self) if self.kept is None else sum(self.kept)

    def __repr__(self) -> str:
        return f"DecidedDeletes({len(self)} files, {self.kept_count} kept)"


@dataclass(slots=True)
class ManifestDecision:
    path: str
    content: str
    spec_id: int
    kept: bool
    stage: str | None
    reason: str
    files: Sequence[FileDecision] = field(default_factory=list)

    def add(self, decision: FileDecision) -> None:
        """One more file decided one by one (a manifest kept whole has KeptFiles instead)."""
        assert isinstance(self.files, list)
        self.files.append(decision)

    def to_json(self) -> dict[str, Any]:
        files = self.files
        return {"path": self.path, "content": self.content, "spec_id": self.spec_id,
                "kept": self.kept, "stage": self.stage, "reason": self.reason,
                "files": files.to_json() if isinstance(files, KeptFiles)
                else [f.to_json() for f in files]}


@dataclass(slots=True)
class PlanExplain:
    snapshot_selection: str
    manifests: list[ManifestDecision] = field(default_factory=list)
    _by_path: dict[str, int] = field(default_factory=dict)

    def add(self, decision: ManifestDecision) -> None:
        self._by_path[decision.path] = len(self.manifests)
        self.manifests.append(decision)

    def manifest(self, path: str) -> ManifestDecision:
        return self.manifests[self._by_path[path]]

    def position(self, path: str) -> int:
        """Where the decision on this manifest is in :attr:`manifests`."""
        return self._by_path[path]


def plan_to_json(plan: ScanPlan) -> dict[str, Any]:
    """The plan as one JSON document: selection, funnel, tasks, explain records."""
    out: dict[str, Any] = {
        "snapshot_id": plan.snapshot_id,
        "schema_id": plan.schema.schema_id,
        "filter": None if plan.row_filter is None else str(plan.row_filter),
        "funnel": plan.funnel.to_json(),
        "tasks": [t for block in _blocks(plan.tasks) for t in tasks_json(block)],
    }
    if plan.explain is not None:
        out["snapshot_selection"] = plan.explain.snapshot_selection
        out["manifests"] = [m.to_json() for m in plan.explain.manifests]
    return out


def task_json(t: FileScanTask, shown: dict[int, tuple[Any, str]] | None = None
              ) -> dict[str, Any]:
    """A task's JSON; ``shown`` keeps each residual's text by identity (a plan shares one
    residual object among the files of a partition: written once, not once per file)."""
    residual = t.residual
    text = None
    if residual is not None:
        got = None if shown is None else shown.get(id(residual))
        if got is not None and got[0] is residual:
            text = got[1]
        else:
            text = str(residual)
            if shown is not None:  # the object is kept with its text: its id stays its own
                shown[id(residual)] = (residual, text)
    return {"file_path": t.data_file.file_path, "spec_id": t.spec_id,
            "sequence_number": t.sequence_number, "record_count": t.data_file.record_count,
            "residual": text, "delete_files": [d.path for d in t.delete_files]}


def tasks_json(tasks: Sequence[FileScanTask]) -> list[dict[str, Any]]:
    """``[task_json(t) for t in tasks]``; a whole-manifest block from its columns, without
    building its tasks."""
    from floe.scan.planning import TaskBlock

    if not isinstance(tasks, TaskBlock):
        shown: dict[int, tuple[Any, str]] = {}
        return [task_json(t, shown) for t in tasks]
    spec_id = tasks.spec_id
    out = [{"file_path": p, "spec_id": spec_id, "sequence_number": s, "record_count": r,
            "residual": None, "delete_files": []}
           for p, s, r in zip(tasks.column("file_path"), tasks.column("sequence_number"),
                              tasks.column("record_count"), strict=True)]
    for i, got in tasks.delete_paths().items():
        out[i]["delete_files"] = got
    return out


def _tasks_text(tasks: Sequence[FileScanTask]) -> str:
    """``encode_compact(tasks_json(tasks))`` without the list's brackets; a whole-manifest
    block is formatted by Arrow from its columns when it can be."""
    from floe.scan.planning import TaskBlock

    if isinstance(tasks, TaskBlock) and not tasks.built:
        got = _json_rows([("file_path", tasks.arrow_column("file_path")),
                          ("spec_id", tasks.spec_id),
                          ("sequence_number", tasks.arrow_column("sequence_number")),
                          ("record_count", tasks.arrow_column("record_count")),
                          ("residual", None),
                          ("delete_files", _json_lists(len(tasks), {
                              i: encode_compact(got)
                              for i, got in tasks.delete_paths().items()}))])
        if got is not None:
            return got
    return encode_compact(tasks_json(tasks))[1:-1]


def _decision_text(decision: ManifestDecision, strings: dict[str, str] | None = None
                   ) -> str:
    """``encode_compact(decision.to_json())``; the decisions on the files of a manifest
    (kept whole, or decided over its columns) formatted by Arrow when it can be. A manifest
    with no file decided (pruned by its summaries, or skipped by its counts) is written here
    field by field, its texts (which repeat from manifest to manifest) encoded once each in
    ``strings``: a list of 10,000 small manifests has as many."""
    files = decision.files
    if strings is not None and type(files) is list and not files:
        got = []
        for value in (decision.content, decision.stage, decision.reason):
            if value is None:
                got.append("null")
                continue
            text = strings.get(value)
            if text is None:
                text = encode_compact(value)
                if len(strings) < 1 << 16:
                    strings[value] = text
            got.append(text)
        content, stage, reason = got
        spec_id, kept = decision.spec_id, decision.kept
        if type(spec_id) is int and type(kept) is bool:
            return (f'{{"path":{encode_compact(decision.path)},"content":{content},'
                    f'"spec_id":{spec_id},"kept":{"true" if kept else "false"},'
                    f'"stage":{stage},"reason":{reason},"files":[]}}')
    if isinstance(files, ColumnarFiles) and not files.built:
        rows = files.json_text()
        if rows is not None:
            doc = dataclasses.replace(decision, files=[])
            head = encode_compact(doc.to_json())
            assert head.endswith('"files":[]}')
            return f"{head[:-2]}{rows}]}}"
    return encode_compact(decision.to_json())


_CONTROL = re.compile(rb"[\x00-\x1f]")  # escaped by the json module as Arrow cannot mimic
_QUOTES = re.compile(rb'["\\]')  # escaped with a backslash


def _escapes(column: pa.Array) -> int:
    """What JSON must escape in a string array's values: 2 for a control character, 1 for a
    quote or backslash only, 0 for nothing. The data buffer is read once, by
    ``floe._native.json_escapes`` when the extension is on (eight bytes at a time), else by
    ``re``; bytes under null slots count too (the caller then looks closer)."""
    if not len(column):
        return 0
    offsets = memoryview(column.buffers()[1]).cast("i")  # a string array's int32 offsets
    start, end = offsets[column.offset], offsets[column.offset + len(column)]
    data = column.buffers()[2]
    if data is None or start == end:
        return 0
    values = memoryview(data)[start:end]
    ext = extension()
    if ext is not None:
        return int(ext.json_escapes(values))
    return 2 if _CONTROL.search(values) else 1 if _QUOTES.search(values) else 0


def _json_values(column: pa.Array) -> tuple[pa.Array, bool] | None:
    """Each value of ``column`` as :data:`encode_compact` writes it, and whether without its
    quotes (a string column without nulls: the caller writes them, joined to the text around);
    None when Arrow cannot write it the same (a string holding a control character, a type
    other than string or integer)."""
    import pyarrow as pa
    from floe import arrow_compute as pc

    if pa.types.is_string(column.type):
        text = column
        escapes = _escapes(column)
        if escapes == 2:
            return None
        if escapes == 1:  # rare
            text = pc.replace_substring(pc.replace_substring(text, "\\", "\\\\"), '"', '\\"')
        if not column.null_count:
            return text, True
        text = pc.binary_join_element_wise('"', text, '"', "")
    elif pa.types.is_integer(column.type):
        text = pc.cast(column, pa.string())
    else:
        return None
    return pc.fill_null(text, "null"), False


def _json_rows(fields: Sequence[tuple[str, Any]]) -> str | None:
    """The JSON objects of the rows of some Arrow columns, comma-separated: what
    ``encode_compact`` writes for a list of dicts with these keys, in this order, without the
    brackets. A field's value is an Arrow array (one value per row), :class:`JsonTexts` or a
    constant. None when
    a column cannot be written by Arrow (:func:`_json_values`)."""
    rows = json_row_texts(fields)
    return None if rows is None else joined_texts(rows)


def joined_texts(rows: pa.Array) -> str:
    """The values of a string array, each ending in a comma, concatenated without the last
    comma (the array's data buffer read once)."""
    if not len(rows):
        return ""
    offsets = memoryview(rows.buffers()[1]).cast("i")  # a string array's int32 offsets
    start, end = offsets[rows.offset], offsets[rows.offset + len(rows)]
    return memoryview(rows.buffers()[2])[start:end - 1].tobytes().decode()


def json_row_texts(fields: Sequence[tuple[str, Any]]) -> pa.Array | None:
    """:func:`_json_rows`'s objects as a string array, one per row, each followed by a
    comma."""
    import pyarrow as pa
    from floe import arrow_compute as pc

    pieces: list[Any] = []
    text = "{"
    for i, (key, value) in enumerate(fields):
        text += ("," if i else "") + encode_compact(key) + ":"
        if isinstance(value, (pa.Array, JsonTexts)):
            got = _json_values(value) if isinstance(value, pa.Array) \
                else (pa.array(value.texts, pa.string()), False)
            if got is None:
                return None
            column, bare = got
            quote = '"' if bare else ""  # a bare string's quotes join the text around it
            pieces += [text + quote, column]
            text = quote
        else:
            text += encode_compact(value)
    pieces.append(text + "},")
    try:
        return pc.binary_join_element_wise(*pieces, "")
    except pa.ArrowException:  # more than 2 GiB of text in one manifest
        return None


def _blocks(tasks: Sequence[FileScanTask]) -> list[Sequence[FileScanTask]]:
    from floe.scan.planning import TaskList

    return tasks.blocks() if isinstance(tasks, TaskList) else [tasks]


#: Compact output goes through the json module's C encoder (``indent`` would disable it).
encode_compact = json.JSONEncoder(separators=(",", ":"), default=str, ensure_ascii=False).encode

#: Characters of manifest explanations :func:`write_plan_json` holds in memory before it
#: spools them to a temporary file (``tempfile`` is imported then, not by every plan).
SPOOL_CHARS = 2 << 20


class _Spool:
    """Comma-separated texts, in memory up to :data:`SPOOL_CHARS`, then in a temporary file."""

    def __init__(self) -> None:
        self.held: list[str] = []
        self.chars = 0
        self.file: IO[str] | None = None

    def add(self, texts: list[str]) -> None:
        text = ("," if self.chars else "") + ",".join(texts)
        self.chars += len(text)
        if self.file is None and self.chars <= SPOOL_CHARS:
            self.held.append(text)
            return
        if self.file is None:
            import tempfile

            self.file = tempfile.TemporaryFile("w+", encoding="utf-8")
            for held in self.held:  # not joined (a joined copy raised a 1M-file plan's
                self.file.write(held)  # peak memory from 297 to 341 MB)
            self.held.clear()
        self.file.write(text)

    def write_to(self, out: IO[str]) -> None:
        if self.file is None:
            for text in self.held:  # not joined: one more copy of them all
                out.write(text)
            return
        self.file.seek(0)
        while chunk := self.file.read(1 << 20):
            out.write(chunk)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


def write_plan_json(stream: PlanStream, out: IO[str]) -> None:
    """Write :func:`plan_to_json`'s document for a :class:`~floe.scan.planning.PlanStream`
    while the plan is produced: tasks as they come, each manifest's explanation once its
    files are decided (then dropped; held until the tasks are written, in a temporary file
    past :data:`SPOOL_CHARS`), the funnel last. Memory stays bounded whatever the number of
    files."""
    plan = stream.plan
    explain = plan.explain
    head = encode_compact({"snapshot_id": plan.snapshot_id, "schema_id": plan.schema.schema_id,
                    "filter": None if plan.row_filter is None else str(plan.row_filter)})
    out.write(head[:-1] + ',"tasks":[')
    spool = _Spool() if explain is not None else None
    strings: dict[str, str] = {}  # texts of manifest decisions, encoded
    sep = ""
    done = 0  # explanations written to the spool

    def flush_explanations(upto: int) -> None:
        nonlocal done
        assert explain is not None and spool is not None
        parts = []
        while done < upto:
            decision = explain.manifests[done]
            parts.append(_decision_text(decision, strings))
            decision.files = []
            done += 1
        if parts:
            spool.add(parts)

    try:
        for m, tasks in stream:
            if tasks:
                # one encoder call per manifest's tasks (a call per task costs more than
                # the encoding): the list's brackets dropped
                out.write(sep + _tasks_text(tasks))
                sep = ","
            if explain is not None:
                flush_explanations(explain.position(m.manifest_path) + 1)
        out.write("]")
        if explain is not None and spool is not None:
            flush_explanations(len(explain.manifests))
            out.write(',"snapshot_selection":' + encode_compact(explain.snapshot_selection)
                      + ',"manifests":[')
            spool.write_to(out)
            out.write("]")
    finally:
        if spool is not None:
            spool.close()
    out.write(',"funnel":' + encode_compact(plan.funnel.to_json()) + "}\n")
