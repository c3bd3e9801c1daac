"""Catalog configuration: catalog names → a type and its options.

Floe's own file is TOML::

    # ~/.floe/catalogs.toml (or the file FLOE_CATALOGS names)
    [catalogs.local]
    type = "filesystem"
    warehouse = "/data/warehouse"          # relative paths are relative to this file

    [catalogs.prod]
    type = "sql"
    uri = "postgresql+psycopg://floe:${PROD_DB_PASSWORD}@db.internal/iceberg"
    warehouse = "s3://lake/prod"
    "s3.endpoint" = "https://s3.internal"   # PyIceberg's FileIO properties, for any type

Values may name environment variables as ``${NAME}``; an unset variable makes that catalog
unusable, not an empty string. When no catalog is called ``local`` and ``FLOE_WAREHOUSE`` is
set, ``local`` is a file-system catalog over that directory (as for the explorer).

Floe also reads the catalogs a user already has for PyIceberg, as PyIceberg 0.12 reads them
(``pyiceberg/utils/config.py``): the first ``.pyiceberg.yaml`` found in ``$PYICEBERG_HOME``,
the home directory, then the current directory (read with strictyaml: every value a string,
keys lower-cased), with ``PYICEBERG_CATALOG__<NAME>__<KEY>`` environment variables on top
(lower-cased; ``__`` inside the key becomes ``.`` and ``_`` becomes ``-``:
``PYICEBERG_CATALOG__PROD__S3__SECRET_ACCESS_KEY`` is ``s3.secret-access-key`` of ``prod``).
PyIceberg's types map to floe's: ``rest`` and ``sql``; an entry without ``type`` is inferred
from its ``uri`` as PyIceberg does (``http…`` → rest, ``sqlite…``/``postgresql…`` → sql);
``glue``, ``hive``, ``dynamodb``, ``bigquery`` and ``in-memory`` entries are listed but
unusable, saying so. As for PyIceberg, ``${NAME}`` is not expanded in the YAML file: a secret
comes from a ``PYICEBERG_CATALOG__…`` variable there.

When several places configure the same name, floe's own settings win: the TOML file, then
``local`` from ``FLOE_WAREHOUSE``, then PyIceberg's configuration (an entry is taken whole
from one place, never merged across them).

Each entry is checked alone: a broken one (unknown type, missing or unknown option, a value
that is not a string, an unset ``${NAME}``) is kept with its :attr:`CatalogConfig.problem`,
and only that catalog fails, when it is asked for; a TOML file that does not parse is an
error for all (which names it defines is unknown). A catalog that cannot be opened (its
database does not answer, refuses the credentials) is a one-line
:class:`~floe.errors.CatalogUnavailable`. Secrets (:func:`is_secret_option` names, passwords
in URIs) never appear in an error message or a ``repr``: :func:`redact` is the one function
that hides them, for the command line, the explorer's pages, API, tasks, audit and logs.

The CLI's ``CATALOG:namespace.table`` arguments resolve through :func:`resolve_table_arg`.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from floe.catalog.base import Catalog, TableIdentifier
from floe.catalog.rest_options import OPTION_PREFIXES as REST_OPTION_PREFIXES
from floe.catalog.rest_options import OPTIONS as REST_OPTIONS
from floe.catalog.table_arg import catalog_table_arg, parse_table_arg
from floe.errors import CatalogUnavailable, FloeError, NotFound, ValidationError
from floe.io import FileIO
from floe.table import Table

__all__ = [
    "CATALOG_TYPES",
    "CatalogConfig",
    "Catalogs",
    "RedactSecrets",
    "default_config_path",
    "is_secret_option",
    "load_catalog",
    "load_catalogs",
    "parse_catalogs",
    "parse_table_arg",
    "pyiceberg_catalogs",
    "pyiceberg_config_candidates",
    "pyiceberg_config_path",
    "redact",
    "redacted_options",
    "resolve_catalog_table",
    "resolve_table_arg",
]

CONFIG_ENV = "FLOE_CATALOGS"
WAREHOUSE_ENV = "FLOE_WAREHOUSE"
DEFAULT_CONFIG = Path("~/.floe/catalogs.toml")
LOCAL = "local"
PYICEBERG_HOME_ENV = "PYICEBERG_HOME"
PYICEBERG_YAML = ".pyiceberg.yaml"

#: Option names that configure file access, for every catalog type (PyIceberg's FileIO
#: properties).
STORAGE_PREFIXES = ("s3.", "gcs.", "adls.")
_CATALOG_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


# -- secrets --------------------------------------------------------------------------------

#: What a secret is replaced with.
REDACTED = "***"
#: Options whose values are secrets (PyIceberg's names). Any option whose name speaks of a
#: secret, token, password, credential, account or API key or authorization is one too
#: (:func:`is_secret_option`): ``header.authorization``, ``client.secret-access-key``...
SECRET_OPTIONS = frozenset({
    "credential", "token", "s3.secret-access-key", "s3.session-token", "adls.account-key",
    "adls.sas-token", "adls.client-secret", "adls.connection-string", "gcs.oauth2.token",
    "gcs.service-account-key",
})
_SECRET_WORDS = re.compile(r"secret|token|passw|credential|account-key|api-key|authoriz"
                           r"|connection-string|service-account-key|private-key")
_NOT_SECRET_SUFFIXES = ("-expires-at", "-uri", "-url", "-endpoint", "-server")
#: ``scheme://user:password@``: the password of a URI (a SQL catalog's ``uri``).
_URI_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)([^@\s/]+)@")
_known_secrets: set[str] = set()
_secrets_lock = threading.Lock()


def is_secret_option(key: str) -> bool:
    """Whether an option's value is a secret (never shown)."""
    k = key.lower()
    return k in SECRET_OPTIONS or (
        _SECRET_WORDS.search(k) is not None and not k.endswith(_NOT_SECRET_SUFFIXES))


def _secret_values(options: Mapping[str, object]) -> set[str]:
    found: set[str] = set()
    for key, value in options.items():
        if not isinstance(value, str) or not value:
            continue
        if is_secret_option(key):
            found |= {value, quote(value, safe=""), unquote(value)}
            if key.lower() == "credential" and ":" in value:  # client_id:client_secret
                found.add(value.split(":", 1)[1])
        for m in _URI_PASSWORD.finditer(value):
            found |= {m.group(2), unquote(m.group(2))}
    found.discard("")
    return found


def _remember_secrets(options: Mapping[str, object]) -> None:
    values = _secret_values(options)
    if values:
        with _secrets_lock:
            _known_secrets.update(values)


def redact(text: str, options: Mapping[str, object] | None = None) -> str:
    """``text`` with every secret replaced by ``***``: the values of secret options of every
    catalog configured in this process (and of ``options``) and any password in a URI."""
    with _secrets_lock:
        secrets = set(_known_secrets)
    if options:
        secrets |= _secret_values(options)
    for secret in sorted(secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return _URI_PASSWORD.sub(rf"\g<1>{REDACTED}@", text)


def redacted_options(options: Mapping[str, str]) -> dict[str, str]:
    """The options as they may be shown: secret values and URI passwords as ``***``."""
    return {k: REDACTED if is_secret_option(k) else _URI_PASSWORD.sub(rf"\g<1>{REDACTED}@", v)
            for k, v in options.items()}


class RedactSecrets(logging.Filter):
    """A logging filter (for a handler) that applies :func:`redact` to each record's message
    and traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


def _one_line(text: str, limit: int = 400) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit - 1] + "…"


def _opening_error(exc: BaseException) -> str | None:
    """What went wrong when a catalog's database or server could not be opened, or None for
    an exception that is not about opening it (a bug: it passes through)."""
    from sqlalchemy.exc import DBAPIError, SQLAlchemyError

    if isinstance(exc, DBAPIError) and exc.orig is not None:
        return str(exc.orig)
    if isinstance(exc, SQLAlchemyError):
        return str(exc).split("(Background on this error at:", 1)[0]
    if isinstance(exc, OSError | ImportError | ValueError):
        return str(exc) or type(exc).__name__
    return None


# -- one catalog ----------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class CatalogConfig:
    """One configured catalog: its ``type`` and the options its constructor takes;
    ``problem`` says why it cannot be used (a broken entry), None when it can."""

    name: str
    type: str
    options: dict[str, str] = field(default_factory=dict)
    source: str = "<config>"
    problem: str | None = None

    def __post_init__(self) -> None:
        _remember_secrets(self.options)

    def __repr__(self) -> str:
        problem = f", problem={self.problem!r}" if self.problem is not None else ""
        return (f"CatalogConfig({self.name!r}, {self.type!r}, "
                f"{redacted_options(self.options)!r}, {self.source!r}{problem})")

    @property
    def storage_properties(self) -> dict[str, str]:
        """The options that configure file access (PyIceberg's ``s3.*``, ``gcs.*``,
        ``adls.*`` names)."""
        return {k: v for k, v in self.options.items() if k.startswith(STORAGE_PREFIXES)}

    def check(self) -> None:
        """ValidationError saying why this catalog cannot be used, if it cannot."""
        if self.problem is not None:
            raise ValidationError(self.problem)
        if self.type not in CATALOG_TYPES:
            raise ValidationError(f"{self.source}: catalog {self.name!r}: floe has no catalog "
                                  f"of type {self.type!r} (it has {', '.join(CATALOG_TYPES)})")

    def create(self, io: FileIO | None = None) -> Catalog:
        """A catalog object (a SQL catalog connects to its database here) reading and
        writing files through ``io`` (default a :class:`~floe.io.FileIO` configured with
        :attr:`storage_properties`). A broken entry is its ValidationError; a database or
        server that cannot be opened is one line of CatalogUnavailable; no message carries
        a secret."""
        self.check()
        spec = CATALOG_TYPES[self.type]
        try:
            return spec.factory(self.name, self.options,
                                io if io is not None else FileIO(self.storage_properties))
        except FloeError as exc:
            text = redact(str(exc), self.options)
            if text == str(exc):
                raise
            raise type(exc)(text) if type(exc) in _PLAIN_ERRORS else FloeError(text) from None
        except Exception as exc:
            why = _opening_error(exc)
            if why is None:
                raise
            raise CatalogUnavailable(
                f"catalog {self.name!r} ({self.type}, from {self.source}) is unavailable: "
                f"{_one_line(redact(why, self.options))}") from None


#: Error classes made from a message alone (a redacted message keeps its class).
_PLAIN_ERRORS = (FloeError, ValidationError, NotFound, CatalogUnavailable)


@dataclass(frozen=True)
class _CatalogType:
    required: frozenset[str]
    optional: frozenset[str]
    factory: Callable[[str, Mapping[str, str], FileIO | None], Catalog]
    path_options: frozenset[str] = frozenset()
    #: Options whose names start so are this type's too (a REST catalog's ``header.``).
    prefixes: tuple[str, ...] = ()
    #: PyIceberg's options of this type that change nothing floe does: accepted in
    #: ``.pyiceberg.yaml`` (SQLAlchemy's ``echo``...), unknown in floe's TOML file.
    pyiceberg_ignored: frozenset[str] = frozenset()


#: PyIceberg's truth values (``pyiceberg.types.strtobool``).
_TRUTH = {"y": True, "yes": True, "t": True, "true": True, "on": True, "1": True,
          "n": False, "no": False, "f": False, "false": False, "off": False, "0": False}
#: Options of every type whose values are true or false.
_BOOL_OPTIONS = frozenset({"init_catalog_tables"})
#: PyIceberg options of any catalog that change nothing floe does (floe has one FileIO).
_PYICEBERG_IGNORED = frozenset({"py-io-impl"})


def _filesystem(name: str, options: Mapping[str, str], io: FileIO | None) -> Catalog:
    from floe.catalog.filesystem import FileSystemCatalog

    return FileSystemCatalog(name, options["warehouse"], io)


def _rest(name: str, options: Mapping[str, str], io: FileIO | None) -> Catalog:
    from floe.catalog.rest import RestCatalog

    return RestCatalog(name, options, io)


def _sql(name: str, options: Mapping[str, str], io: FileIO | None) -> Catalog:
    from floe.catalog.sql import SqlCatalog

    create = _TRUTH[options.get("init_catalog_tables", "true").lower()]
    return SqlCatalog(name, options["uri"], options.get("warehouse"), io, create_tables=create)


CATALOG_TYPES: dict[str, _CatalogType] = {
    "filesystem": _CatalogType(
        frozenset({"warehouse"}), frozenset(), _filesystem, frozenset({"warehouse"})
    ),
    "sql": _CatalogType(
        frozenset({"uri"}), frozenset({"warehouse", "init_catalog_tables"}), _sql,
        frozenset({"warehouse"}), pyiceberg_ignored=frozenset({"echo", "pool_pre_ping"}),
    ),
    "rest": _CatalogType(
        frozenset({"uri"}), REST_OPTIONS - {"uri"}, _rest, prefixes=REST_OPTION_PREFIXES,
        # floe loads every snapshot, plans scans itself and has no views
        pyiceberg_ignored=frozenset({"snapshot-loading-mode", "scan-planning-mode",
                                     "view-endpoints-supported", "rest.sigv4.max-retries"}),
    ),
}

#: PyIceberg's catalog types (``pyiceberg.catalog.CatalogType``).
PYICEBERG_TYPES = ("rest", "hive", "glue", "dynamodb", "sql", "in-memory", "bigquery")


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


def _strings(entry: object) -> dict[str, str]:
    """The string options of a broken entry, kept to show (its type, its warehouse)."""
    if not isinstance(entry, Mapping):
        return {}
    return {str(k): v for k, v in entry.items() if k != "type" and isinstance(v, str)}


def _options(where: str, kind: str, entry: Mapping[str, Any], *, expand: bool,
             base_dir: Path | None, pyiceberg: bool) -> dict[str, str]:
    """An entry's options checked against its type: ValidationError naming the first
    problem."""
    spec = CATALOG_TYPES[kind]
    allowed = spec.required | spec.optional
    ignored = spec.pyiceberg_ignored | _PYICEBERG_IGNORED if pyiceberg else frozenset()
    options: dict[str, str] = {}
    for key, value in entry.items():
        if key == "type":
            continue
        if key not in allowed | ignored and not key.startswith(STORAGE_PREFIXES + spec.prefixes):
            raise ValidationError(
                f"{where}: unknown option {key!r} for type {kind!r} "
                f"(allowed: {sorted(allowed)}, and s3.*, gcs.*, adls.*"
                f"{''.join(f', {p}*' for p in spec.prefixes)})")
        if not isinstance(value, str):
            what = "a mapping" if isinstance(value, Mapping) else "a list" \
                if isinstance(value, list) else type(value).__name__
            raise ValidationError(f"{where}: option {key!r} must be a string, not {what}")
        if expand:
            value = _expand(value, where)
        if key in _BOOL_OPTIONS and value.lower() not in _TRUTH:
            raise ValidationError(f"{where}: option {key!r} must be true or false, "
                                  f"not {value!r}")
        if key in spec.path_options and base_dir is not None and _is_local_path(value):
            value = str((base_dir / Path(value).expanduser()).resolve())
        if key not in ignored:
            options[key] = value
    missing = spec.required - options.keys()
    if missing:
        raise ValidationError(f"{where}: missing option(s) {sorted(missing)}")
    return options


def _toml_entry(name: str, entry: object, source: str, base_dir: Path | None) -> CatalogConfig:
    where = f"{source}: catalog {name!r}"
    kind = entry.get("type") if isinstance(entry, Mapping) else None
    try:
        if not _CATALOG_NAME.match(name):
            raise ValidationError(f"{where}: names are letters, digits, '_' and '-'")
        if not isinstance(entry, Mapping):
            raise ValidationError(f"{where} must be a table")
        if not isinstance(kind, str) or kind not in CATALOG_TYPES:
            raise ValidationError(
                f"{where}: type must be one of {sorted(CATALOG_TYPES)}, got {kind!r}")
        options = _options(where, kind, entry, expand=True, base_dir=base_dir, pyiceberg=False)
    except ValidationError as exc:
        return CatalogConfig(name, kind if isinstance(kind, str) else "unknown",
                             _strings(entry), source, problem=str(exc))
    return CatalogConfig(name, kind, options, source)


def parse_catalogs(
    doc: Mapping[str, Any], source: str = "<config>", base_dir: Path | None = None
) -> dict[str, CatalogConfig]:
    """The ``[catalogs.*]`` tables of a parsed TOML document. Its shape is checked strictly
    (ValidationError naming the file); each entry alone: one with an unknown type, a missing
    or unknown option, a non-string value or an unset ``${NAME}`` is kept with its
    :attr:`~CatalogConfig.problem`, which only that catalog raises when it is used."""
    unknown_top = set(doc) - {"catalogs"}
    if unknown_top:
        raise ValidationError(f"{source}: unknown top-level keys {sorted(unknown_top)}")
    catalogs = doc.get("catalogs", {})
    if not isinstance(catalogs, Mapping):
        raise ValidationError(f"{source}: 'catalogs' must be a table of catalogs")
    return {name: _toml_entry(name, entry, source, base_dir) for name, entry in catalogs.items()}


# -- PyIceberg's configuration --------------------------------------------------------------


def pyiceberg_config_candidates() -> list[Path]:
    """Where PyIceberg looks for ``.pyiceberg.yaml``, in its order: ``$PYICEBERG_HOME``, the
    home directory, then the current directory (whether the files exist or not)."""
    return [Path(directory) / PYICEBERG_YAML
            for directory in (os.environ.get(PYICEBERG_HOME_ENV), os.path.expanduser("~"),
                              os.getcwd()) if directory]


def _pyiceberg_yaml_files() -> list[Path]:
    return [path for path in pyiceberg_config_candidates() if path.is_file()]


def pyiceberg_config_path() -> Path | None:
    """The first ``.pyiceberg.yaml`` PyIceberg would look at (None when there is none)."""
    files = _pyiceberg_yaml_files()
    return files[0] if files else None


def _lower_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k).lower(): _lower_keys(v) for k, v in value.items()}
    return value


def _read_pyiceberg_yaml(path: Path) -> dict[str, Any]:
    """The document as PyIceberg reads it (strictyaml, keys lower-cased)."""
    import strictyaml

    try:
        data = strictyaml.load(path.read_text(encoding="utf-8")).data
    except (strictyaml.YAMLError, UnicodeDecodeError, OSError) as exc:
        raise ValidationError(f"{path}: not a YAML file PyIceberg reads: "
                              f"{_one_line(str(exc))}") from None
    if data in ("", None):
        return {}
    if not isinstance(data, dict):
        raise ValidationError(f"{path}: not a mapping of settings")
    return dict(_lower_keys(data))


def _pyiceberg_env(environ: Mapping[str, str]) -> list[tuple[list[str], str, str]]:
    """``PYICEBERG_CATALOG__…`` variables as PyIceberg splits them: (path, value, variable)."""
    out = []
    for variable, value in sorted(environ.items()):
        lower = variable.lower()
        if not lower.startswith("pyiceberg_"):
            continue
        parts = [p.replace("__", ".").replace("_", "-")
                 for p in lower[len("pyiceberg_"):].split("__", maxsplit=2)]
        if parts[0] == "catalog":
            out.append((parts, value, variable))
    return out


def _pyiceberg_type(where: str, entry: Mapping[str, Any]) -> str:
    """Floe's type for a PyIceberg entry (its ``type``, or inferred from its ``uri`` as
    PyIceberg does); ValidationError when floe has none."""
    given = entry.get("type")
    if given is not None and not isinstance(given, str):
        raise ValidationError(f"{where}: type must be a string")
    if given:
        kind = given.lower()
    else:
        uri = entry.get("uri")
        if not isinstance(uri, str) or not uri:
            raise ValidationError(f"{where}: no type, and no uri to infer it from (PyIceberg "
                                  "infers rest from http(s)://, sql from sqlite and "
                                  "postgresql URIs)")
        if uri.startswith("http"):
            kind = "rest"
        elif uri.startswith("thrift"):
            kind = "hive"
        elif uri.startswith(("sqlite", "postgresql")):
            kind = "sql"
        else:
            raise ValidationError(f"{where}: cannot infer the catalog type from its uri "
                                  f"{redact(uri)!r}: set type")
    if kind in PYICEBERG_TYPES and kind in CATALOG_TYPES:
        return kind
    if kind in PYICEBERG_TYPES:
        usable = [t for t in PYICEBERG_TYPES if t in CATALOG_TYPES]
        raise ValidationError(f"{where}: floe does not support {kind} catalogs (it reads "
                              f"{' and '.join(usable)} catalogs of a .pyiceberg.yaml)")
    raise ValidationError(f"{where}: type {given!r} is not a PyIceberg catalog type "
                          f"({', '.join(PYICEBERG_TYPES)})")


def _pyiceberg_entry(name: str, entry: object, source: str) -> CatalogConfig:
    where = f"{source}: catalog {name!r}"
    kind = "unknown"
    try:
        if not isinstance(entry, Mapping):
            raise ValidationError(f"{where} must be a mapping of properties")
        given = entry.get("type")
        kind = given.lower() if isinstance(given, str) and given else kind
        if not _CATALOG_NAME.match(name):
            raise ValidationError(f"{where}: floe's catalog names are letters, digits, '_' "
                                  "and '-'")
        kind = _pyiceberg_type(where, entry)
        options = _options(where, kind, entry, expand=False, base_dir=None, pyiceberg=True)
    except ValidationError as exc:
        return CatalogConfig(name, kind, _strings(entry), source, problem=str(exc))
    return CatalogConfig(name, kind, options, source)


def pyiceberg_catalogs(
    environ: Mapping[str, str] | None = None,
) -> tuple[dict[str, CatalogConfig], list[str]]:
    """The catalogs PyIceberg's configuration defines (:func:`pyiceberg_config_path`, then
    ``PYICEBERG_CATALOG__<NAME>__<KEY>`` variables of ``environ``, default the process's,
    on top), each checked alone; and what could not be read at all (a file that does not
    parse), one sentence each."""
    environ = os.environ if environ is None else environ
    problems: list[str] = []
    path: Path | None = None
    doc: dict[str, Any] = {}
    for path in _pyiceberg_yaml_files():  # the first that says something, as PyIceberg
        try:
            doc = _read_pyiceberg_yaml(path)
        except ValidationError as exc:
            problems.append(str(exc))
            break
        if doc:
            break
    catalogs = doc.get("catalog", {})
    if not isinstance(catalogs, dict):
        problems.append(f"{path}: 'catalog' must be a mapping of catalogs")
        catalogs = {}
    catalogs = {k: dict(v) if isinstance(v, dict) else v for k, v in catalogs.items()}
    from_env: set[str] = set()
    for parts, value, variable in _pyiceberg_env(environ):
        if len(parts) < 3:
            problems.append(f"{variable}: names no catalog property "
                            "(PYICEBERG_CATALOG__<NAME>__<KEY>)")
            continue
        entry = catalogs.setdefault(parts[1], {})
        if not isinstance(entry, dict):
            problems.append(f"{variable}: catalog {parts[1]!r} is not a mapping")
            continue
        entry[parts[2]] = value
        from_env.add(parts[1])
    out: dict[str, CatalogConfig] = {}
    for name, entry in catalogs.items():
        variables = f"PYICEBERG_CATALOG__{name.upper().replace('-', '_')}__* variables"
        if name in doc.get("catalog", {}):
            source = f"{path} (and {variables})" if name in from_env else str(path)
        else:
            source = variables
        out[name] = _pyiceberg_entry(name, entry, source)
    return out, problems


# -- all of it ------------------------------------------------------------------------------


class Catalogs(dict[str, CatalogConfig]):
    """The configured catalogs by name; ``problems``: configuration that could not be read
    at all (PyIceberg's file when it does not parse), one sentence each."""

    def __init__(self, catalogs: Mapping[str, CatalogConfig] | None = None,
                 problems: Iterable[str] = ()) -> None:
        super().__init__(catalogs or {})
        self.problems: tuple[str, ...] = tuple(problems)


def load_catalogs(
    path: str | os.PathLike[str] | None = None, *, warehouse: str | None = None,
    pyiceberg: bool = True,
) -> Catalogs:
    """The catalogs configured in ``path`` (default :func:`default_config_path`; a missing
    default file means none), plus ``local``, a file-system catalog over ``warehouse``
    (default ``$FLOE_WAREHOUSE``), when the file configures no catalog of that name, plus,
    with ``pyiceberg``, PyIceberg's catalogs of names not taken (:func:`pyiceberg_catalogs`).
    A TOML file that cannot be parsed is a ValidationError; a broken entry only makes its
    own catalog unusable (:attr:`CatalogConfig.problem`)."""
    explicit = path is not None or CONFIG_ENV in os.environ
    file = Path(path) if path is not None else default_config_path()
    catalogs: dict[str, CatalogConfig] = {}
    if file.is_file():
        import tomllib  # its regular expressions compile on import: only with a file to read

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
    problems: list[str] = []
    if pyiceberg:
        theirs, problems = pyiceberg_catalogs()
        for name, config in theirs.items():
            catalogs.setdefault(name, config)
    return Catalogs(catalogs, problems)


ConfigArg = str | os.PathLike[str] | Mapping[str, CatalogConfig] | None


def _configs(config: ConfigArg) -> Mapping[str, CatalogConfig]:
    if config is None or isinstance(config, (str, os.PathLike)):
        return load_catalogs(config)
    return config


def load_catalog(name: str, config: ConfigArg = None) -> Catalog:
    """The catalog called ``name``: from ``config`` (a file path, or the mapping
    :func:`load_catalogs` returns), by default from :func:`load_catalogs`. NotFound when
    none has that name; its ValidationError when its entry is broken; CatalogUnavailable
    when its database or server cannot be opened."""
    configs = _configs(config)
    if name not in configs:
        known = ", ".join(sorted(configs)) or "none"
        unread = "".join(f"; {p}" for p in getattr(configs, "problems", ()))
        raise NotFound(f"no catalog named {name!r} is configured (configured: {known})"
                       f"{unread}")
    return configs[name].create()


# -- table arguments of the command line ----------------------------------------------------


def resolve_catalog_table(
    arg: str, config: ConfigArg = None
) -> tuple[Catalog, TableIdentifier] | None:
    """The catalog and identifier a ``CATALOG:namespace.table`` argument names (the table
    need not exist: ``floe create``); None when ``arg`` is a path. The caller closes the
    catalog."""
    parsed = catalog_table_arg(arg)
    if parsed is None:
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
