"""The Celery app: configured from Django settings (``CELERY_*``); its tasks are in
:mod:`explorer.tasks.jobs` (their names, ``explorer.tasks.run_task`` and
``explorer.tasks.reap``, stay as they were: messages already queued keep working).

Start a worker with ``celery -A explorer worker`` (``python -m explorer.run`` does it for you).
"""

import os

from celery import Celery
from celery.signals import task_postrun, worker_process_init
from kombu.transport import TRANSPORT_ALIASES

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "explorer.settings")
# The embedded SQL broker, polling faster than kombu's default (see explorer.broker).
TRANSPORT_ALIASES["sqla"] = "explorer.broker:SQLTransport"

app = Celery("explorer")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(lambda: ["explorer.tasks"], related_name="jobs")


@worker_process_init.connect
def _yield_to_the_web(**_: object) -> None:
    """Pool processes (where tasks run) leave room for the web server on the same machine: a
    compaction must not slow pages down. They run at a lower priority (FLOE_WORKER_NICE)
    and, on Linux, on FLOE_WORKER_CPUS of the machine's cores (by default all but one, so
    one core is always free for requests)."""
    from django.conf import settings

    if settings.FLOE_WORKER_NICE:
        os.nice(settings.FLOE_WORKER_NICE)
    if hasattr(os, "sched_setaffinity"):
        cores = sorted(os.sched_getaffinity(0))
        wanted = settings.FLOE_WORKER_CPUS or len(cores)
        if wanted < len(cores):
            os.sched_setaffinity(0, set(cores[-wanted:]))


@task_postrun.connect
def _keep_nothing_of_a_task(task: object = None, **_: object) -> None:
    """A pool process keeps nothing of a finished task in memory: a task reads states and
    manifests no later task asks for again (each commit makes new ones), so caches kept
    across tasks would only fill up to their bounds, sized for the web's many readers, and
    the process grow for hours. The next task reads through the persistent manifest cache.
    A task run eagerly (in the caller's process, as tests do) leaves the caller's caches."""
    if getattr(getattr(task, "request", None), "is_eager", False):
        return
    import pyarrow as pa

    from explorer import cache

    cache.clear()
    pa.default_memory_pool().release_unused()
