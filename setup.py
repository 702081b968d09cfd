# cffi has no declarative form for its extension: this one keyword is all
# that lives here; everything else is in pyproject.toml.
from setuptools import setup

setup(cffi_modules=["lowlat/core/_build.py:ffibuilder"])
