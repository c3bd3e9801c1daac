"""Changing tables through tasks: the kinds of task (``kinds``: validation and what each
does; ``forms``; ``changes``: previews and dry-run plans; ``runners``: the work), what pages
call (``services``: submit, cancel, retry, preview), the worker's side (``jobs``: the Celery
tasks, ``runtime``: running one, ``lifecycle``: its state in the database, the reaper;
``outcomes``: how an ending reads) and the pages (``views``)."""
