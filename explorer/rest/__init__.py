"""The Iceberg REST catalog the site serves (``/iceberg/``): roles, audit and engine reports
around :mod:`floe.rest_server` (``services``; the views are api/views_iceberg.py)."""
