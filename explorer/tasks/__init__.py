"""Changing tables through tasks: the kinds of task (``kinds``: one declaration per kind
naming its validation, flags, form, preview, runner and outcome sentence; ``forms``;
``changes``: previews and dry-run plans; ``runners``: the work; ``sentences``: what a finished
run did), what pages call (``services``: submit, cancel, retry, preview), the worker's side
(``jobs``: the Celery tasks, ``runtime``: running one, ``lifecycle``: its state in the
database, the reaper; ``outcomes``: how an ending reads) and the pages (``views``)."""
