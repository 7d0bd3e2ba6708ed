# Root conftest: makes the repository importable when tests run from a checkout.

import atexit
import os
import shutil
import tempfile

# The persistent compilation cache is on by default (the user's cache directory);
# tests use their own, fresh for each test session and removed after it, so they
# neither read nor fill the user's cache. Subprocesses of tests inherit it.
_CACHE = tempfile.mkdtemp(prefix="minijax-test-cache-")
os.environ["MINIJAX_COMPILATION_CACHE_DIR"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
