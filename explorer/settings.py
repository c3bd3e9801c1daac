"""Settings of the Floe explorer, read from the environment.

Every setting has an embedded default that makes ``make run`` work on a laptop: a SQLite
database and a SQLite-backed Celery broker under ``var/``, and a demo warehouse. Production
sets ``DATABASE_URL`` (Postgres), ``CELERY_BROKER_URL`` (Redis), ``FLOE_SECRET_KEY``,
``FLOE_ALLOWED_HOSTS``, ``FLOE_WAREHOUSE`` and, for more catalogs, ``FLOE_CATALOGS``. A
malformed value stops the process.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path

from explorer.env import (
    database_from_url,
    envbool,
    envchoice,
    envfloat,
    envint,
    envlist,
    envstr,
)

BASE_DIR = Path(__file__).resolve().parent.parent

# Local state (SQLite files, the demo warehouse, the generated secret key).
VAR_DIR = Path(envstr("FLOE_VAR_DIR", str(BASE_DIR / "var"))).resolve()

DEBUG = envbool("FLOE_DEBUG", "false")


def _local_secret_key(var_dir: Path) -> str:
    """A key generated once per ``var/`` so sessions survive restarts without configuration."""
    path = var_dir / "secret-key"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    var_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process (web or worker) wrote it first
        return path.read_text().strip()
    with os.fdopen(fd, "w") as f:
        f.write(key)
    return key


SECRET_KEY = envstr("FLOE_SECRET_KEY", "") or _local_secret_key(VAR_DIR)

ALLOWED_HOSTS = envlist("FLOE_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = envlist("FLOE_CSRF_TRUSTED_ORIGINS", "")

# --- Floe -----------------------------------------------------------------------------------

# The file-system catalog named "local": tables at <warehouse>/<namespace>/<table>/metadata/.
FLOE_WAREHOUSE_IS_DEMO = "FLOE_WAREHOUSE" not in os.environ
FLOE_WAREHOUSE = str(Path(envstr("FLOE_WAREHOUSE", str(VAR_DIR / "demo-warehouse"))).resolve())
# More catalogs (file-system and SQL) from the floe catalog file the `floe` command reads
# (floe.catalog.config); empty means ~/.floe/catalogs.toml when that file exists.
FLOE_CATALOGS = envstr("FLOE_CATALOGS", "")
FLOE_SPARK_MASTER = envstr("FLOE_SPARK_MASTER", "local[*]")
# A REST catalog's requests: seconds to connect and for each read of an answer, and times a
# read is asked again (after a timeout, 429 or 5xx), unless its entry sets its own
# rest.client.* options: a server that does not answer fails a page in bounded time.
FLOE_CATALOG_TIMEOUT = envfloat("FLOE_CATALOG_TIMEOUT", "10", minimum=0.1)
FLOE_CATALOG_RETRIES = envint("FLOE_CATALOG_RETRIES", "2", minimum=0, maximum=10)
# /readyz (explorer.readiness): seconds each of its checks (database, broker, each catalog)
# may take before it counts as not answering.
FLOE_READY_TIMEOUT = envfloat("FLOE_READY_TIMEOUT", "3", minimum=0.1)
# Parsed metadata files kept in memory (metadata files are immutable, so keyed by path); the
# other parts of explorer.cache are sized from it.
FLOE_METADATA_CACHE_SIZE = envint("FLOE_METADATA_CACHE_SIZE", "256", minimum=1)
FLOE_PAGE_SIZE = envint("FLOE_PAGE_SIZE", "50", minimum=1, maximum=1000)

# Anonymous visitors may read (pages and GET requests of the API); changes always need a user.
# Defaults to true only for the embedded setup (SQLite, served on 127.0.0.1 by `make run`),
# where the person at the keyboard is the only user; false as soon as DATABASE_URL is set.
FLOE_ALLOW_ANONYMOUS = envbool(
    "FLOE_ALLOW_ANONYMOUS", "false" if os.environ.get("DATABASE_URL") else "true"
)
# The role every signed-in user has on every catalog without a grant (explorer.access.permissions):
# "viewer" (reading needs nothing more than a login, as before roles existed) or "none"
# (reading a catalog needs a grant on it). Changes always need a maintainer grant.
FLOE_DEFAULT_ROLE = envchoice("FLOE_DEFAULT_ROLE", "viewer", ("none", "viewer"))
# Expensive reads (scan plans, previews, exports) a user may start per minute; 0: no limit.
FLOE_EXPENSIVE_READS_PER_MINUTE = envint("FLOE_EXPENSIVE_READS_PER_MINUTE", "120", minimum=0)
# Explained scan plans of large table states (explorer.tables.scan.LARGE_PLAN_FILES data
# files or more: ~2 KB per file while one is made) a web process makes at once; others wait.
FLOE_LARGE_PLANS_AT_ONCE = envint("FLOE_LARGE_PLANS_AT_ONCE", "1", minimum=1, maximum=64)

# --- tasks ----------------------------------------------------------------------------------

# A running task writes its heartbeat (and its latest progress) this often; the reaper fails a
# run whose heartbeat is older than the timeout (its worker was killed).
FLOE_TASK_HEARTBEAT_SECONDS = envfloat("FLOE_TASK_HEARTBEAT_SECONDS", "1", minimum=0.05)
FLOE_TASK_HEARTBEAT_TIMEOUT = envfloat("FLOE_TASK_HEARTBEAT_TIMEOUT", "60", minimum=0.5)
# A run still QUEUED this many seconds after its message was sent is sent again by the reaper
# (a broker restarted without its data lost the message; a duplicate is refused by the claim).
FLOE_TASK_REQUEUE_SECONDS = envfloat("FLOE_TASK_REQUEUE_SECONDS", "300", minimum=1)
# How often the reaper runs (Celery beat, embedded in the worker explorer.run starts).
FLOE_REAPER_INTERVAL = envfloat("FLOE_REAPER_INTERVAL", "10", minimum=0.1)
# Times a task whose commit conflicted with a concurrent one is run again (kinds that plan
# afresh on every run only: compaction, manifest rewrite, delete).
FLOE_TASK_CONFLICT_RETRIES = envint("FLOE_TASK_CONFLICT_RETRIES", "2", minimum=0, maximum=10)
# Export files live under <var>/exports/ and are removed this many seconds after they were
# written.
FLOE_EXPORT_DIR = VAR_DIR / "exports"
FLOE_EXPORT_MAX_AGE = envint("FLOE_EXPORT_MAX_AGE", "86400", minimum=1)
# Compaction runs on Spark (floe.spark.compaction) when its plan's input exceeds this many
# bytes and the task's engine is "auto" (the default); "local" / "spark" choose explicitly.
FLOE_COMPACTION_SPARK_MIN_BYTES = envint("FLOE_COMPACTION_SPARK_MIN_BYTES", str(10 * 2**30),
                                         minimum=0)
# Processes of the worker explorer.run starts (two: a short task runs beside a long one).
FLOE_WORKER_CONCURRENCY = envint("FLOE_WORKER_CONCURRENCY", "2", minimum=1, maximum=64)
# CPU niceness added to the worker's pool processes, so that pages stay fast while a long
# task runs on the same machine (0: the web's priority).
FLOE_WORKER_NICE = envint("FLOE_WORKER_NICE", "10", minimum=0, maximum=19)
# Cores the worker's pool processes may run on (Linux): by default all but one, which stays
# free for the web server; 0 means all of them.
FLOE_WORKER_CPUS = envint("FLOE_WORKER_CPUS", str(max(1, (os.cpu_count() or 1) - 1)),
                          minimum=0)
# The allocator behind pyarrow's buffers in every process of the site (explorer.apps): the
# C library's malloc by default. pyarrow's own default (mimalloc) keeps what a compaction
# or a Parquet read freed in per-thread heaps, so a long-running process grows with each
# one; "mimalloc" / "jemalloc" choose pyarrow's others.
FLOE_ARROW_MEMORY_POOL = envchoice("FLOE_ARROW_MEMORY_POOL", "system",
                                   ("system", "mimalloc", "jemalloc"))
# The Iceberg REST catalog served under /iceberg/ (api/views_iceberg.py): seconds an OAuth2
# access token lives, the largest request body read, and the names of each catalog's
# storage properties handed to clients with its tables (a loadTable's config; none unless
# listed, e.g. "s3.endpoint,s3.region,s3.path-style-access").
FLOE_ICEBERG_TOKEN_TTL = envint("FLOE_ICEBERG_TOKEN_TTL", "3600", minimum=10)
FLOE_ICEBERG_MAX_BODY = envint("FLOE_ICEBERG_MAX_BODY", str(8 * 2**20), minimum=1024)
FLOE_ICEBERG_VENDED_PROPERTIES = envlist("FLOE_ICEBERG_VENDED_PROPERTIES", "")
# Metrics reports (scans, commits) kept per table and report type; the oldest go first, so a
# chatty engine cannot fill the database.
FLOE_ICEBERG_REPORTS_PER_TABLE = envint("FLOE_ICEBERG_REPORTS_PER_TABLE", "500", minimum=1,
                                        maximum=1_000_000)

# --- Django ---------------------------------------------------------------------------------

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "explorer",
    "api",
]

MIDDLEWARE = [
    # /healthz and /readyz, before anything checks hosts, redirects or reads a session
    "explorer.readiness.ProbeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "explorer.middleware.DomainErrorMiddleware",
]

ROOT_URLCONF = "explorer.urls"
WSGI_APPLICATION = "explorer.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "builtins": ["explorer.templatetags.formats"],  # |bytes and |count everywhere
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "explorer.context_processors.assets",
                "explorer.context_processors.roles",
            ],
        },
    },
]

if os.environ.get("DATABASE_URL"):
    _default_db = database_from_url(os.environ["DATABASE_URL"])
else:
    _default_db = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(VAR_DIR / "floe.sqlite3")}
if _default_db["ENGINE"] == "django.db.backends.sqlite3":
    # The web server and the worker write to the same file: WAL lets readers run beside the
    # writer, IMMEDIATE takes the write lock up front instead of failing on lock upgrade.
    _default_db["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # Tests: a file, not Django's in-memory default, so that the Celery worker the tests start
    # can open the test database (DATABASE_URL pointing at it); one per test process.
    _default_db["TEST"] = {
        "NAME": str(Path(tempfile.gettempdir()) / f"floe-test-{os.getpid()}.sqlite3")}
else:
    _default_db["CONN_HEALTH_CHECKS"] = True
# Each thread keeps its connection between requests (seconds): opening one costs more than
# most requests (SQLite also checkpoints its WAL when the last connection closes).
_default_db["CONN_MAX_AGE"] = envint("FLOE_DB_CONN_MAX_AGE", "60", minimum=0)
DATABASES = {"default": _default_db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "explorer:tables"
LOGOUT_REDIRECT_URL = "explorer:tables"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "frontend" / "static"]
# With FLOE_STATIC_ROOT (explorer.run sets it to var/static and runs collectstatic first; a
# deployment does the same) the files are collected with content hashes in their names and
# gzip/brotli copies, and WhiteNoise serves them compressed with a one-year, immutable cache.
# Without it (tests, manage.py runserver) WhiteNoise serves them from the finders as they are.
STATIC_ROOT = envstr("FLOE_STATIC_ROOT", "") or None
WHITENOISE_USE_FINDERS = STATIC_ROOT is None
if STATIC_ROOT is not None:
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }

# --- REST API -------------------------------------------------------------------------------

REST_FRAMEWORK = {
    # Token first: its WWW-Authenticate challenge makes unauthenticated requests 401, not 403.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["api.permissions.CatalogRoles"],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.PageNumberPagination",
    "DEFAULT_RENDERER_CLASSES": [
        "api.renderers.FloeJSONRenderer",  # NaN and ±Infinity as strings, never a 500
        "api.renderers.FloeBrowsableAPIRenderer",  # every API URL renders in a browser too
    ],
    "PAGE_SIZE": FLOE_PAGE_SIZE,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "api.exceptions.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Floe API",
    # Markdown: Swagger UI shows it with the links, so the browsable API is a click away
    "DESCRIPTION": "Browse Apache Iceberg tables and run maintenance tasks. Entry points, also "
                   "browsable: [the API root](/api/), [catalogs](/api/catalogs/), "
                   "[tasks](/api/tasks/), [audit](/api/audit/); the raw schema: "
                   "[/api/schema/](/api/schema/?format=json). The Iceberg REST catalog the "
                   "site serves has its own reference: "
                   "[/iceberg/reference/](/iceberg/reference/).\n\n"
                   "JSON has no numbers for NaN and the infinities: wherever a float is not "
                   "finite (row values, bounds, partition values), a response has the string "
                   '"NaN", "Infinity" or "-Infinity" instead.\n\n'
                   "Every error is a JSON object: `error` names what went wrong (`NotFound`, "
                   "`Forbidden`, `InvalidArgument`, `FilterInvalid`, `FilterTooDeep`, "
                   "`TaskParamsInvalid`, `RequestTooLarge`...), `detail` says it in a sentence, "
                   "`param` names the query parameter or field at fault when there is one.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Tags and operation ids from the path after /api/ ("catalogs"), whatever other views
    # the site has (left to itself the prefix is computed over every endpoint it sees)
    "SCHEMA_PATH_PREFIX": "/api/",
    # every error's shape and status on every operation (api/schema.py), after the enums
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums",
                             "api.schema.error_responses"],
    # Swagger UI from the installed sidecar package, never a CDN
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
}

# --- Celery ---------------------------------------------------------------------------------

CELERY_BROKER_URL = envstr(
    "CELERY_BROKER_URL", f"sqla+sqlite:///{VAR_DIR / 'celery-broker.sqlite3'}"
)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Progress and state live in TaskRun rows; a result backend is only used when configured.
CELERY_RESULT_BACKEND = envstr("CELERY_RESULT_BACKEND", "") or None
CELERY_TASK_IGNORE_RESULT = CELERY_RESULT_BACKEND is None
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = envint("FLOE_TASK_SOFT_TIME_LIMIT", "3600", minimum=1)
CELERY_TASK_TIME_LIMIT = envint("FLOE_TASK_TIME_LIMIT", str(CELERY_TASK_SOFT_TIME_LIMIT + 60),
                                minimum=CELERY_TASK_SOFT_TIME_LIMIT + 1)
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# One queue name per deployment (tests use their own on a shared Redis).
CELERY_TASK_DEFAULT_QUEUE = envstr("FLOE_TASK_QUEUE", "celery")
# The reaper: fails runs whose worker died, removes expired exports (explorer.tasks.reap).
# It expires like its interval, so a busy worker never works through a backlog of them.
CELERY_BEAT_SCHEDULE = {
    "floe-reap": {
        "task": "explorer.tasks.reap",
        "schedule": FLOE_REAPER_INTERVAL,
        "options": {"expires": max(1.0, FLOE_REAPER_INTERVAL)},
    },
}
# The health sweep (explorer.maintenance.metrics): every catalog's tables, each state not
# seen yet recorded (commits made elsewhere are "external"); 0 turns it off.
FLOE_METRICS_SWEEP_SECONDS = envfloat("FLOE_METRICS_SWEEP_SECONDS", "300", minimum=0)
# Maintenance policies (explorer.maintenance.autopilot): how often they look at their tables
# (each acts at most once per its own every_seconds), and how many of their runs may be
# queued or running at once.
FLOE_POLICY_TICK_SECONDS = envfloat("FLOE_POLICY_TICK_SECONDS", "60", minimum=0)
FLOE_POLICY_MAX_RUNS = envint("FLOE_POLICY_MAX_RUNS", "2", minimum=1)
if FLOE_POLICY_TICK_SECONDS:
    CELERY_BEAT_SCHEDULE["floe-policies"] = {
        "task": "explorer.tasks.policies_tick",
        "schedule": FLOE_POLICY_TICK_SECONDS,
        "options": {"expires": FLOE_POLICY_TICK_SECONDS},
    }
# Alerts (explorer.maintenance.alerts): how often the rules are checked against the recorded
# health and failed policy runs; 0 turns it off.
FLOE_ALERT_CHECK_SECONDS = envfloat("FLOE_ALERT_CHECK_SECONDS", "60", minimum=0)
if FLOE_ALERT_CHECK_SECONDS:
    CELERY_BEAT_SCHEDULE["floe-alerts"] = {
        "task": "explorer.tasks.alerts_check",
        "schedule": FLOE_ALERT_CHECK_SECONDS,
        "options": {"expires": FLOE_ALERT_CHECK_SECONDS},
    }
if FLOE_METRICS_SWEEP_SECONDS:
    CELERY_BEAT_SCHEDULE["floe-metrics-sweep"] = {
        "task": "explorer.tasks.metrics_sweep",
        "schedule": FLOE_METRICS_SWEEP_SECONDS,
        "options": {"expires": FLOE_METRICS_SWEEP_SECONDS},
    }

# --- Logging --------------------------------------------------------------------------------

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    # no secret of a catalog's configuration in a log line or traceback (floe.catalog.config)
    "filters": {"secrets": {"()": "floe.catalog.config.RedactSecrets"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain",
                             "filters": ["secrets"]}},
    "root": {"handlers": ["console"], "level": envstr("FLOE_LOG_LEVEL", "INFO")},
}
