"""Build script for the one C extension; everything else is in pyproject.toml.

``minijax.runtime._speedups`` (C bases of ``minijax.Array`` and of jit's dispatch;
see its source) is optional: without a C compiler the install still succeeds and
minijax uses pure-Python equivalents (slower dispatch; NumPy then reads arrays
through ``Array.__array__``).
"""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("minijax.runtime._speedups", ["minijax/runtime/_speedups.c"], optional=True,
              extra_compile_args=["-Wall"]),
])
