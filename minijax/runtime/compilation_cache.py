"""A persistent compilation cache: serialized executables in a directory.

Off by default; on when ``minijax_compilation_cache_dir`` is set (config or the
``MINIJAX_COMPILATION_CACHE_DIR`` environment variable)::

    minijax.config.update("minijax_compilation_cache_dir", "/tmp/minijax-cache")

Each entry is one file named by its key (a SHA-256 hex digest that the caller
computes from the module, the compile options and the platform). A file holds
a magic line, the SHA-256 of the payload and the payload. Writers write a
temporary file in the same directory and rename it into place, so readers in
other processes see either no entry or a complete one. An entry that is
truncated or damaged (wrong magic or checksum) is logged, ignored and later
replaced; I/O errors never propagate to the caller.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile

from minijax.config import config

logger = logging.getLogger("minijax")

_MAGIC = b"MINIJAX-XLA-CACHE v1\n"
_SUFFIX = ".xla"


def cache_dir() -> str | None:
    """The configured cache directory, or None when the cache is off."""
    path = config.minijax_compilation_cache_dir
    return os.path.expanduser(path) if path else None


def entry_path(key: str, directory: str | None = None) -> str:
    directory = directory or cache_dir()
    if directory is None:
        raise RuntimeError("the compilation cache is off (minijax_compilation_cache_dir unset)")
    return os.path.join(directory, key + _SUFFIX)


def get(key: str) -> bytes | None:
    """The payload stored under ``key``, or None (no cache, no entry, damaged entry)."""
    directory = cache_dir()
    if directory is None:
        return None
    path = entry_path(key, directory)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        logger.warning("compilation cache: cannot read %s: %s", path, e)
        return None
    head = len(_MAGIC) + 32
    if len(data) < head or not data.startswith(_MAGIC):
        logger.warning("compilation cache: ignoring damaged entry %s (bad header)", path)
        return None
    digest, payload = data[len(_MAGIC):head], data[head:]
    if hashlib.sha256(payload).digest() != digest:
        logger.warning("compilation cache: ignoring damaged entry %s (checksum mismatch)", path)
        return None
    return payload


def put(key: str, payload: bytes) -> bool:
    """Store ``payload`` under ``key`` atomically; returns whether it was written."""
    directory = cache_dir()
    if directory is None:
        return False
    tmp = None
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}-", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "wb") as f:
            f.write(_MAGIC)
            f.write(hashlib.sha256(payload).digest())
            f.write(payload)
        os.replace(tmp, entry_path(key, directory))  # atomic on POSIX and Windows
        return True
    except OSError as e:
        logger.warning("compilation cache: cannot write entry %s in %s: %s", key, directory, e)
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return False


def make_key(*parts: str | bytes) -> str:
    """A cache key: the SHA-256 of the parts (each length-prefixed, so they cannot run together)."""
    h = hashlib.sha256()
    for part in parts:
        b = part.encode() if isinstance(part, str) else bytes(part)
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()
