# Floe: the explorer in its production shape (`python -m explorer.run --prod`: gunicorn,
# Celery workers and one beat) with Java 17 for Spark. Configure it with environment variables
# (see docker-compose.yml and the README): DATABASE_URL (PostgreSQL), CELERY_BROKER_URL
# (Redis), FLOE_SECRET_KEY and FLOE_ALLOWED_HOSTS are required; FLOE_WAREHOUSE,
# FLOE_WEB_PROCESSES and FLOE_WORKERS are optional.
#
# bookworm, pinned: Debian 13 (trixie), the newer default of python:3.11-slim, has no
# openjdk-17 package.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/*

RUN useradd --create-home --uid 1000 floe \
 && mkdir -p /var/lib/floe \
 && chown floe:floe /var/lib/floe

WORKDIR /app

# Dependencies first, from the lock, so a code change does not reinstall them: an empty
# package stands in for the sources while pip resolves the project's requirements.
COPY pyproject.toml requirements.lock README.md ./
RUN mkdir floe explorer api \
 && touch floe/__init__.py explorer/__init__.py api/__init__.py \
 && pip install -c requirements.lock ".[spark,server]" \
 && pip uninstall -y floe \
 && rm -rf floe explorer api build ./*.egg-info

COPY . .
# Editable: templates and frontend/static are read from this tree, and `floe` is on PATH.
# The C manifest decoder (floe/_native.c) is compiled here, with a compiler installed for it
# and removed after; the build fails if it could not be (floe would decode in Python).
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && pip install --no-deps -c requirements.lock -e . \
 && python -c "import floe._native" \
 && apt-get purge -y --auto-remove gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/* build \
 && FLOE_SECRET_KEY=collectstatic-only FLOE_VAR_DIR=/tmp/floe-build \
    FLOE_STATIC_ROOT=/app/staticfiles python manage.py collectstatic --noinput \
 && rm -rf /tmp/floe-build

# The container is reachable from the network: nobody reads anonymously unless told to.
# Create the first user with `python manage.py createsuperuser` inside the container.
ENV FLOE_HOST=0.0.0.0 \
    FLOE_PORT=8000 \
    FLOE_VAR_DIR=/var/lib/floe \
    FLOE_STATIC_ROOT=/app/staticfiles \
    FLOE_ALLOW_ANONYMOUS=false

USER floe
VOLUME ["/var/lib/floe"]
EXPOSE 8000

# Ready: the database, the broker and every catalog answer (explorer.readiness). The slim
# image has no curl; Python's urllib fails on anything but a 2xx.
HEALTHCHECK --interval=30s --timeout=10s --start-period=120s --retries=3 \
    CMD python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('FLOE_PORT', '8000') + '/readyz', timeout=8)"

# explorer.run stops the web server, the workers and beat cleanly on SIGTERM (`docker stop`).
STOPSIGNAL SIGTERM
CMD ["python", "-m", "explorer.run", "--prod"]
