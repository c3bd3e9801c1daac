"""kombu's SQLAlchemy transport (the embedded broker, ``sqla+sqlite:///…``), polling faster.

The transport polls its table for messages; kombu's default, once a second, alone would use up
the 1 s target from queued to running. Its ``polling_interval`` option cannot be set through
the broker's transport options (the SQL transport hands every option to SQLAlchemy's
``create_engine``), so :mod:`explorer.celery` maps the ``sqla`` scheme to this subclass. A
poll is one indexed SELECT on a small table.
"""

from __future__ import annotations

from kombu.transport.sqlalchemy import Transport

#: Seconds between polls of an empty queue.
POLLING_INTERVAL = 0.2


class SQLTransport(Transport):  # type: ignore[misc]
    polling_interval = POLLING_INTERVAL
