"""Seeing tables: catalogs → namespaces → tables, a table's pages (overview, snapshots, files,
partitions, scan plan, preview, engine reports) and what they read (``selectors``,
``details``, ``scan``, ``reports``)."""
