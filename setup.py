"""The optional C extension floe._native (floe/_native.c: manifests decoded into Arrow
columns, floe/scan/native.py). Everything else is in pyproject.toml. ``optional=True``: where
it cannot be compiled, floe installs without it and decodes manifests in Python."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("floe._native", ["floe/_native.c"], optional=True,
                             extra_compile_args=["-O2"])])
