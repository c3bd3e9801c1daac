"""File access for table files: local paths and ``file:`` URIs.

Writes are atomic: the bytes go to a hidden temporary file in the target directory, which is
then hard-linked to the target name (fails when the name exists, so two writers can never
both create the same metadata file) or renamed over it when ``overwrite`` is set. This is
the "atomic rename without replace" the spec's file-system tables rely on (spec "File System
Tables").
"""

from __future__ import annotations

import errno
import os
import uuid
from typing import BinaryIO
from urllib.parse import unquote, urlparse

from floe.errors import FloeError, NotFound, ValidationError

__all__ = ["FileIO", "local_path"]


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
        raise ValidationError(
            f"{location}: the {scheme!r} scheme is not supported (floe reads local paths and "
            f"file: URIs)"
        )
    return location


class FileIO:
    """Reads and writes files by location. Locations handed back by :meth:`list` keep the
    style of the prefix they were listed under (``file:`` URI or plain path)."""

    def guard(self, location: str) -> None:
        """Raise when this FileIO may not read ``location`` (a plain FileIO reads anything;
        the explorer's confines reads to a warehouse). Every cache of what files hold calls
        it before a lookup, so a copy cached for another reader is never a way around it."""

    def identity(self, location: str) -> tuple[int, int] | None:
        """What tells this file from another one written at the same location later (size
        and modification time), for caches keyed by location: a file-system table dropped
        and created again reuses its metadata file names. None when there is no file."""
        try:
            st = os.stat(local_path(location))
        except OSError:
            return None
        return st.st_size, st.st_mtime_ns

    def read(self, location: str) -> bytes:
        """The whole file; NotFound when it does not exist."""
        with self.open(location) as f:
            return f.read()

    def open(self, location: str) -> BinaryIO:
        """A binary file object for reading; NotFound when the file does not exist."""
        path = local_path(location)
        try:
            return open(path, "rb")
        except FileNotFoundError:
            raise NotFound(f"{location}: file does not exist") from None
        except IsADirectoryError:
            raise NotFound(f"{location}: is a directory, not a file") from None
        except NotADirectoryError:
            raise NotFound(f"{location}: file does not exist") from None

    def exists(self, location: str) -> bool:
        return os.path.exists(local_path(location))

    def is_dir(self, location: str) -> bool:
        return os.path.isdir(local_path(location))

    def size(self, location: str) -> int:
        try:
            return os.stat(local_path(location)).st_size
        except (FileNotFoundError, NotADirectoryError):
            raise NotFound(f"{location}: file does not exist") from None

    def write(self, location: str, data: bytes, overwrite: bool = False) -> None:
        """Write ``data`` atomically; readers see the old file or the whole new one.

        Without ``overwrite`` an existing target raises FileExistsError and is left alone,
        also when another process creates it concurrently. Parent directories are created.
        """
        path = local_path(location)
        directory = os.path.dirname(path) or "."
        os.makedirs(directory, exist_ok=True)
        if not overwrite and os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, "file already exists", location)
        tmp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
        try:
            with open(tmp, "xb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            if overwrite:
                os.replace(tmp, path)
            else:
                self._link_no_replace(tmp, path, location)
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)
        _fsync_dir(directory)

    @staticmethod
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

    def delete(self, location: str, missing_ok: bool = False) -> None:
        """Delete a file; NotFound when it is missing unless ``missing_ok``."""
        try:
            os.unlink(local_path(location))
        except (FileNotFoundError, NotADirectoryError):
            if not missing_ok:
                raise NotFound(f"{location}: file does not exist") from None
        except IsADirectoryError:
            raise FloeError(f"{location}: is a directory; FileIO deletes files only") from None

    def list(self, prefix: str) -> list[str]:
        """Every file under a directory (recursively), sorted; [] when it does not exist.

        Hidden temporary files of in-progress writes are skipped.
        """
        root = local_path(prefix)
        if not os.path.isdir(root):
            return []
        base = prefix.rstrip("/")
        out: list[str] = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            rel_dir = os.path.relpath(dirpath, root)
            for name in filenames:
                if name.startswith(".") and name.endswith(".tmp"):
                    continue
                rel = name if rel_dir == "." else f"{rel_dir.replace(os.sep, '/')}/{name}"
                out.append(f"{base}/{rel}")
        return sorted(out)


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
