"""Local files (plain paths and ``file:`` URIs) for :class:`floe.io.FileIO`.

Writes are atomic: the bytes go to a hidden temporary file in the target directory, which is
then hard-linked to the target name (fails when the name exists, so two writers can never
both create the same metadata file) or renamed over it when overwriting. This is the "atomic
rename without replace" the spec's file-system tables rely on (spec "File System Tables").
"""

from __future__ import annotations

import builtins
import errno
import os
import uuid
from collections.abc import Iterable, Iterator
from typing import BinaryIO
from urllib.parse import unquote, urlparse

from floe.errors import FloeError, NotFound, ValidationError
from floe.io.store import FileInfo, Store

__all__ = ["LocalStore", "local_path"]


def local_path(location: str) -> str:
    """The local file-system path of a plain path or a ``file:`` URI.

    ``file:///a/b``, ``file:/a/b`` and ``file://localhost/a/b`` all give ``/a/b``; percent
    escapes in URIs are decoded. Other schemes raise ValidationError.
    """
    if not location:
        raise ValidationError("empty file location")
    if location.startswith("file:"):
        parsed = urlparse(location)
        if parsed.netloc not in ("", "localhost"):
            raise ValidationError(f"{location}: file URIs with a remote host are not supported")
        return unquote(parsed.path) or "/"
    scheme, sep, _ = location.partition("://")
    if sep and scheme.isalnum() and len(scheme) > 1:
        raise ValidationError(f"{location}: not a local file (scheme {scheme!r})")
    return location


class LocalStore(Store):
    """The local file system. Keys are locations (plain paths or ``file:`` URIs); listed
    locations keep the style of the prefix they were listed under."""

    exclusive_create = True

    def open(self, location: str) -> BinaryIO:
        path = local_path(location)
        try:
            return open(path, "rb")
        except FileNotFoundError:
            raise NotFound(f"{location}: file does not exist") from None
        except IsADirectoryError:
            raise NotFound(f"{location}: is a directory, not a file") from None
        except NotADirectoryError:
            raise NotFound(f"{location}: file does not exist") from None

    def read(self, location: str) -> bytes:
        with self.open(location) as f:
            return f.read()

    def read_range(self, location: str, start: int, length: int) -> bytes:
        with self.open(location) as f:
            f.seek(start)
            return f.read(length)

    def head(self, location: str) -> FileInfo | None:
        try:
            st = os.stat(local_path(location))
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not os.path.isfile(local_path(location)):
            return None
        return FileInfo(location, st.st_size, st.st_mtime_ns // 1_000_000, str(st.st_mtime_ns))

    def exists(self, location: str) -> bool:
        return os.path.exists(local_path(location))

    def is_dir(self, location: str) -> bool:
        return os.path.isdir(local_path(location))

    def write(self, location: str, data: bytes, overwrite: bool) -> None:
        path = local_path(location)
        directory = os.path.dirname(path) or "."
        os.makedirs(directory, exist_ok=True)
        if not overwrite and os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, "file already exists", location)
        tmp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
        try:
            try:
                with open(tmp, "xb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
            except OSError as e:  # the disk full, a quota: name the file, not the temporary
                raise OSError(e.errno, e.strerror, location) from e
            if overwrite:
                os.replace(tmp, path)
            else:
                _link_no_replace(tmp, path, location)
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)
        _fsync_dir(directory)

    def delete(self, location: str, missing_ok: bool) -> None:
        try:
            os.unlink(local_path(location))
        except (FileNotFoundError, NotADirectoryError):
            if not missing_ok:
                raise NotFound(f"{location}: file does not exist") from None
        except IsADirectoryError:
            raise FloeError(f"{location}: is a directory; FileIO deletes files only") from None

    def delete_many(self, locations: Iterable[str]) -> list[tuple[str, Exception]]:
        failed: list[tuple[str, Exception]] = []
        for location in locations:
            try:
                self.delete(location, missing_ok=True)
            except (FloeError, OSError) as exc:
                failed.append((location, exc))
        return failed

    def list(self, prefix: str) -> Iterator[FileInfo]:
        """Every file under a directory, recursively, sorted by location; hidden temporary
        files of in-progress writes are skipped."""
        root = local_path(prefix)
        if not os.path.isdir(root):
            return
        base = prefix.rstrip("/")
        found: builtins.list[FileInfo] = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            rel_dir = os.path.relpath(dirpath, root)
            for name in filenames:
                if name.startswith(".") and name.endswith(".tmp"):
                    continue
                rel = name if rel_dir == "." else f"{rel_dir.replace(os.sep, '/')}/{name}"
                try:
                    st = os.stat(os.path.join(dirpath, name))
                except OSError:
                    continue  # deleted while listed
                found.append(FileInfo(f"{base}/{rel}", st.st_size, st.st_mtime_ns // 1_000_000,
                                      str(st.st_mtime_ns)))
        yield from sorted(found, key=lambda f: f.location)

    def list_dir(self, prefix: str) -> tuple[builtins.list[str], builtins.list[str]]:
        root = local_path(prefix)
        try:
            names = sorted(os.listdir(root))
        except (FileNotFoundError, NotADirectoryError):
            return [], []
        base = prefix.rstrip("/")
        dirs: builtins.list[str] = []
        files: builtins.list[str] = []
        for n in names:
            (dirs if os.path.isdir(os.path.join(root, n)) else files).append(f"{base}/{n}")
        return dirs, files


def _link_no_replace(tmp: str, path: str, location: str) -> None:
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise FileExistsError(errno.EEXIST, "file already exists", location) from None
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV,
                           errno.EMLINK):
            raise
        # No hard links on this file system: exclusive create still refuses to replace,
        # but a reader may briefly see a partial file.
        with open(tmp, "rb") as src, open(path, "xb") as dst:
            dst.write(src.read())
            dst.flush()
            os.fsync(dst.fileno())


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
