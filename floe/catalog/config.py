"""Catalog configuration: catalog names → a type and its options, in a TOML file.

::

    # ~/.floe/catalogs.toml (or the file FLOE_CATALOGS names)
    [catalogs.local]
    type = "filesystem"
    warehouse = "/data/warehouse"          # relative paths are relative to this file

    [catalogs.prod]
    type = "sql"
    uri = "postgresql+psycopg://floe@db.internal/iceberg"
    warehouse = "/data/prod-warehouse"

Values may name environment variables as ``${NAME}`` (a password in a URI, say); an unset
variable is an error, not an empty string. When no catalog is called ``local`` and
``FLOE_WAREHOUSE`` is set, ``local`` is a file-system catalog over that directory (as for the
explorer). The CLI's ``CATALOG:namespace.table`` arguments resolve through
:func:`resolve_table_arg`.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from floe.catalog.base import Catalog, TableIdentifier
from floe.errors import NotFound, ValidationError
from floe.io import FileIO
from floe.table import Table

__all__ = [
    "CATALOG_TYPES",
    "CatalogConfig",
    "default_config_path",
    "load_catalog",
    "load_catalogs",
    "parse_catalogs",
    "parse_table_arg",
    "resolve_catalog_table",
    "resolve_table_arg",
]

CONFIG_ENV = "FLOE_CATALOGS"
WAREHOUSE_ENV = "FLOE_WAREHOUSE"
DEFAULT_CONFIG = Path("~/.floe/catalogs.toml")
LOCAL = "local"

#: Option names that configure file access, for every catalog type (PyIceberg's FileIO
#: properties).
STORAGE_PREFIXES = ("s3.", "gcs.", "adls.")
_CATALOG_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: ``CATALOG:namespace.table``; a path never matches (it has ``/`` or no ``:``).
_TABLE_ARG = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*):([^/\\]+)$")


@dataclass(frozen=True)
class CatalogConfig:
    """One configured catalog: its ``type`` and the options its constructor takes."""

    name: str
    type: str
    options: dict[str, str] = field(default_factory=dict)
    source: str = "<config>"

    @property
    def storage_properties(self) -> dict[str, str]:
        """The options that configure file access (PyIceberg's ``s3.*``, ``gcs.*``,
        ``adls.*`` names)."""
        return {k: v for k, v in self.options.items() if k.startswith(STORAGE_PREFIXES)}

    def create(self, io: FileIO | None = None) -> Catalog:
        """A catalog object (a SQL catalog connects to its database here) reading and
        writing files through ``io`` (default a :class:`~floe.io.FileIO` configured with
        :attr:`storage_properties`)."""
        spec = CATALOG_TYPES[self.type]
        return spec.factory(self.name, self.options,
                            io if io is not None else FileIO(self.storage_properties))


@dataclass(frozen=True)
class _CatalogType:
    required: frozenset[str]
    optional: frozenset[str]
    factory: Callable[[str, Mapping[str, str], FileIO | None], Catalog]
    path_options: frozenset[str] = frozenset()


def _filesystem(name: str, options: Mapping[str, str], io: FileIO | None) -> Catalog:
    from floe.catalog.filesystem import FileSystemCatalog

    return FileSystemCatalog(name, options["warehouse"], io)


def _sql(name: str, options: Mapping[str, str], io: FileIO | None) -> Catalog:
    from floe.catalog.sql import SqlCatalog

    return SqlCatalog(name, options["uri"], options.get("warehouse"), io)


CATALOG_TYPES: dict[str, _CatalogType] = {
    "filesystem": _CatalogType(
        frozenset({"warehouse"}), frozenset(), _filesystem, frozenset({"warehouse"})
    ),
    "sql": _CatalogType(
        frozenset({"uri"}), frozenset({"warehouse"}), _sql, frozenset({"warehouse"})
    ),
}


# -- reading the configuration --------------------------------------------------------------


def default_config_path() -> Path:
    """``$FLOE_CATALOGS`` when set, else ``~/.floe/catalogs.toml``."""
    env = os.environ.get(CONFIG_ENV)
    return Path(env) if env else DEFAULT_CONFIG.expanduser()


def _expand(value: str, where: str) -> str:
    def sub(m: re.Match[str]) -> str:
        if m.group(1) not in os.environ:
            raise ValidationError(f"{where}: environment variable {m.group(1)} is not set")
        return os.environ[m.group(1)]

    return _ENV_REF.sub(sub, value)


def _is_local_path(value: str) -> bool:
    return "://" not in value and not value.startswith("file:")


def parse_catalogs(
    doc: Mapping[str, Any], source: str = "<config>", base_dir: Path | None = None
) -> dict[str, CatalogConfig]:
    """The ``[catalogs.*]`` tables of a parsed TOML document, checked strictly: an unknown
    type, a missing or unknown option or a non-string value is an error naming the file."""
    unknown_top = set(doc) - {"catalogs"}
    if unknown_top:
        raise ValidationError(f"{source}: unknown top-level keys {sorted(unknown_top)}")
    catalogs = doc.get("catalogs", {})
    if not isinstance(catalogs, Mapping):
        raise ValidationError(f"{source}: 'catalogs' must be a table of catalogs")
    out: dict[str, CatalogConfig] = {}
    for name, entry in catalogs.items():
        where = f"{source}: catalog {name!r}"
        if not _CATALOG_NAME.match(name):
            raise ValidationError(f"{where}: names are letters, digits, '_' and '-'")
        if not isinstance(entry, Mapping):
            raise ValidationError(f"{where} must be a table")
        kind = entry.get("type")
        if kind not in CATALOG_TYPES:
            raise ValidationError(
                f"{where}: type must be one of {sorted(CATALOG_TYPES)}, got {kind!r}")
        spec = CATALOG_TYPES[kind]
        options: dict[str, str] = {}
        for key, value in entry.items():
            if key == "type":
                continue
            if key not in spec.required | spec.optional \
                    and not key.startswith(STORAGE_PREFIXES):
                raise ValidationError(
                    f"{where}: unknown option {key!r} for type {kind!r} "
                    f"(allowed: {sorted(spec.required | spec.optional)})")
            if not isinstance(value, str):
                raise ValidationError(f"{where}: option {key!r} must be a string")
            value = _expand(value, where)
            if key in spec.path_options and base_dir is not None and _is_local_path(value):
                value = str((base_dir / Path(value).expanduser()).resolve())
            options[key] = value
        missing = spec.required - options.keys()
        if missing:
            raise ValidationError(f"{where}: missing option(s) {sorted(missing)}")
        out[name] = CatalogConfig(name, kind, options, source)
    return out


def load_catalogs(
    path: str | os.PathLike[str] | None = None, *, warehouse: str | None = None
) -> dict[str, CatalogConfig]:
    """The catalogs configured in ``path`` (default :func:`default_config_path`; a missing
    default file means none), plus ``local``, a file-system catalog over ``warehouse``
    (default ``$FLOE_WAREHOUSE``), when the file configures no catalog of that name."""
    explicit = path is not None or CONFIG_ENV in os.environ
    file = Path(path) if path is not None else default_config_path()
    catalogs: dict[str, CatalogConfig] = {}
    if file.is_file():
        try:
            doc = tomllib.loads(file.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise ValidationError(f"{file}: not a valid TOML file: {e}") from None
        catalogs = parse_catalogs(doc, str(file), file.resolve().parent)
    elif explicit:
        raise NotFound(f"{file}: catalog configuration file does not exist")
    source = "warehouse argument"
    if warehouse is None:
        warehouse, source = os.environ.get(WAREHOUSE_ENV), f"${WAREHOUSE_ENV}"
    if LOCAL not in catalogs and warehouse:
        catalogs[LOCAL] = CatalogConfig(LOCAL, "filesystem", {"warehouse": warehouse}, source)
    return catalogs


ConfigArg = str | os.PathLike[str] | Mapping[str, CatalogConfig] | None


def _configs(config: ConfigArg) -> Mapping[str, CatalogConfig]:
    if config is None or isinstance(config, (str, os.PathLike)):
        return load_catalogs(config)
    return config


def load_catalog(name: str, config: ConfigArg = None) -> Catalog:
    """The catalog called ``name``: from ``config`` (a file path, or the mapping
    :func:`load_catalogs` returns), by default from :func:`load_catalogs`."""
    configs = _configs(config)
    if name not in configs:
        known = ", ".join(sorted(configs)) or "none"
        raise NotFound(f"no catalog named {name!r} is configured (configured: {known})")
    return configs[name].create()


# -- table arguments of the command line ----------------------------------------------------


def parse_table_arg(arg: str) -> tuple[str, TableIdentifier] | None:
    """``"prod:sales.orders"`` → ``("prod", sales.orders)``; None for anything that looks
    like a path (contains ``/`` or ``\\``, or has no ``CATALOG:`` prefix)."""
    m = _TABLE_ARG.match(arg)
    if m is None or arg.startswith("file:"):
        return None
    return m.group(1), TableIdentifier.parse(m.group(2))


def resolve_catalog_table(
    arg: str, config: ConfigArg = None
) -> tuple[Catalog, TableIdentifier] | None:
    """The catalog and identifier a ``CATALOG:namespace.table`` argument names (the table
    need not exist: ``floe create``); None when ``arg`` is a path. The caller closes the
    catalog."""
    parsed = parse_table_arg(arg)
    if parsed is None or os.path.exists(arg):
        return None
    name, ident = parsed
    return load_catalog(name, config), ident


def resolve_table_arg(arg: str, config: ConfigArg = None) -> Table | tuple[FileIO, str]:
    """A CLI ``TABLE`` argument: ``CATALOG:namespace.table`` loads the table from the
    configured catalog (a :class:`~floe.table.Table`, commits go through its catalog); a
    table directory or metadata file gives ``(io, metadata_location)``."""
    from floe.catalog.filesystem import resolve_metadata_location

    resolved = resolve_catalog_table(arg, config)
    if resolved is None:
        io = FileIO()
        return io, resolve_metadata_location(io, arg)
    catalog, ident = resolved
    try:
        return catalog.load_table(ident)
    except BaseException:
        catalog.close()
        raise
