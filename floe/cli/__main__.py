"""``python -m floe.cli``: the ``floe`` program."""

from floe.cli import program

program()
