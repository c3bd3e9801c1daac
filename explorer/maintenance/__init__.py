"""Tables that look after themselves: their health over time (``metrics``: a row per table
state Floe observes, from its own tasks, REST commits and a periodic sweep of the catalogs
for commits made elsewhere)."""
