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
from pathlib import Path

from explorer.env import database_from_url, envbool, envint, envlist, envstr

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
    "explorer",
    "api",
]

MIDDLEWARE = [
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
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "explorer.context_processors.assets",
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
else:
    _default_db["CONN_MAX_AGE"] = envint("FLOE_DB_CONN_MAX_AGE", "60", minimum=0)
    _default_db["CONN_HEALTH_CHECKS"] = True
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
# Set (and run collectstatic) for a deployment; without it WhiteNoise serves from the finders.
STATIC_ROOT = envstr("FLOE_STATIC_ROOT", "") or None
WHITENOISE_USE_FINDERS = STATIC_ROOT is None

# --- REST API -------------------------------------------------------------------------------

REST_FRAMEWORK = {
    # Token first: its WWW-Authenticate challenge makes unauthenticated requests 401, not 403.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["api.permissions.ReadAnonymouslyIfAllowed"],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.PageNumberPagination",
    "PAGE_SIZE": FLOE_PAGE_SIZE,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "api.exceptions.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Floe API",
    "DESCRIPTION": "Browse Apache Iceberg tables and run maintenance tasks.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
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
CELERY_TASK_TIME_LIMIT = CELERY_TASK_SOFT_TIME_LIMIT + 60
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# --- Logging --------------------------------------------------------------------------------

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": envstr("FLOE_LOG_LEVEL", "INFO")},
}
