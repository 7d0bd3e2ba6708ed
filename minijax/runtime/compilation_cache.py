"""A persistent compilation cache: serialized executables in a directory.

Off by default; on when ``minijax_compilation_cache_dir`` is set (config or the
``MINIJAX_COMPILATION_CACHE_DIR`` environment variable)::

    minijax.config.update("minijax_compilation_cache_dir", "/tmp/minijax-cache")

Entries
    Each entry is one file, ``<key>.xla``, named by its key (a SHA-256 hex digest
    that the caller computes from the module, the compile options and the
    platform). A file holds a magic line, the key again, the SHA-256 of the key and
    the payload, and the payload. An entry is used only if the key it records is
    the one asked for and the checksum matches; otherwise (damaged, truncated, or
    another entry's file copied over it) it is logged, ignored and replaced by the
    next write. Writers write a temporary file in the same directory and rename it
    into place, so readers in other processes see either no entry or a complete one.

Size
    ``minijax_compilation_cache_max_size`` (bytes, default 1 GiB; environment
    ``MINIJAX_COMPILATION_CACHE_MAX_SIZE``) bounds the total size of the entries.
    After each write the least recently used entries are deleted until the total
    fits: an entry's modification time is its last use (a hit touches it). As with
    jax's ``jax_compilation_cache_max_size``, ``-1`` means no limit and ``0`` turns
    the cache off. An entry larger than the limit is not written.

Robustness
    Entries are opened without following symbolic links and without blocking (a
    FIFO named like an entry cannot hang the reader), must be regular files owned
    by this user, and are read with a size bound. No I/O problem -- a missing or
    unwritable directory, odd paths (a NUL byte), a full disk -- reaches the caller:
    each is logged (logger ``"minijax"``) and costs at most a recompilation. The
    header (magic, key) is read and checked before the body, so a large file that
    is not an entry costs one small read. Only files the cache wrote -- its names
    and its magic -- are counted or deleted by eviction; other files there survive.

Trust
    An entry is native code that this process runs. Anyone who can write to the
    cache directory can therefore run code as you: a directory writable by other
    users (group- or world-writable without the sticky bit) or owned by another
    user is named in a warning, once per directory. The checksum detects
    corruption, not attackers.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import stat
import tempfile
import time

from minijax.config import config

logger = logging.getLogger("minijax")

_MAGIC = b"MINIJAX-XLA-CACHE v2\n"
_SUFFIX = ".xla"
_KEY = re.compile(r"[0-9a-f]{64}")
_HEAD = len(_MAGIC) + 64 + 1 + 32  # magic, key, newline, SHA-256
_TMP_SUFFIX = ".tmp"
_ENTRY_NAME = re.compile(r"[0-9a-f]{64}\.xla")
_TMP_NAME = re.compile(r"\.[0-9a-f]{16}-[a-z0-9_]+\.tmp")  # put's mkstemp names
_STALE_TMP_SECONDS = 3600  # temporary files of writers that died are removed after this
_READ_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) |
               getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
_IO_ERRORS = (OSError, ValueError, TypeError)  # ValueError/TypeError: odd paths (NUL bytes)

_checked_dirs: set[str] = set()


class _BadEntry(Exception):
    """An entry file that exists but cannot be used (logged, then ignored)."""


def cache_dir() -> str | None:
    """The configured cache directory, or None when the cache is off."""
    path = config.minijax_compilation_cache_dir
    if not path or max_size() == 0:
        return None
    return os.path.expanduser(path)


def max_size() -> int:
    """The size limit in bytes: -1 (or any negative value) for none, 0 for a disabled cache."""
    value = config.minijax_compilation_cache_max_size
    return -1 if value is None or value < 0 else value


def entry_path(key: str, directory: str | None = None) -> str:
    """The file of the entry ``key`` (a SHA-256 hex digest) in ``directory``."""
    directory = directory or cache_dir()
    if directory is None:
        raise RuntimeError("the compilation cache is off (minijax_compilation_cache_dir unset)")
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise ValueError(f"a compilation cache key is 64 lowercase hex digits, got {key!r:.80}")
    return os.path.join(directory, key + _SUFFIX)


def get(key: str) -> bytes | None:
    """The payload stored under ``key``, or None (no cache, no entry, unusable entry).

    A hit marks the entry as recently used. Never raises for I/O problems.
    """
    directory = cache_dir()
    if directory is None:
        return None
    path = f"{directory}/{key}{_SUFFIX}"  # for messages, until entry_path has checked it
    try:
        path = entry_path(key, directory)
        _check_directory(directory)
        return _read_entry(path, key)
    except FileNotFoundError:
        return None
    except _BadEntry as e:
        logger.warning("compilation cache: ignoring entry %s (%s); it will be replaced", path, e)
        return None
    except _IO_ERRORS as e:
        logger.warning("compilation cache: cannot read %s: %s", path, e)
        return None


def put(key: str, payload: bytes) -> bool:
    """Store ``payload`` under ``key`` atomically, then evict least recently used
    entries beyond the size limit; returns whether it was written. Never raises for
    I/O problems."""
    directory = cache_dir()
    if directory is None:
        return False
    limit = max_size()
    size = _HEAD + len(payload)
    if limit > 0 and size > limit:
        logger.warning("compilation cache: not storing entry %s of %d bytes, more than the "
                       "cache's size limit of %d bytes (minijax_compilation_cache_max_size)",
                       key, size, limit)
        return False
    tmp = None
    try:
        path = entry_path(key, directory)
        os.makedirs(directory, mode=0o700, exist_ok=True)
        _check_directory(directory)
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}-", suffix=_TMP_SUFFIX, dir=directory)
        with os.fdopen(fd, "wb") as f:
            f.write(_MAGIC + key.encode("ascii") + b"\n")
            f.write(_checksum(key, payload))
            f.write(payload)
        os.replace(tmp, path)  # atomic on POSIX and Windows
        tmp = None
    except _IO_ERRORS as e:
        logger.warning("compilation cache: cannot write entry %s in %s: %s", key, directory, e)
        return False
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    if limit > 0:
        _evict(directory, limit, keep=os.path.basename(path))
    return True


def make_key(*parts: str | bytes) -> str:
    """A cache key: the SHA-256 of the parts (each length-prefixed, so they cannot run together)."""
    h = hashlib.sha256()
    for part in parts:
        b = part.encode() if isinstance(part, str) else bytes(part)
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


# ---- pieces ----------------------------------------------------------------------------------

def _checksum(key: str, payload: bytes) -> bytes:
    return hashlib.sha256(key.encode("ascii") + b"\n" + payload).digest()


def _read_entry(path: str, key: str) -> bytes:
    """The payload of the entry file at ``path`` if it is a usable entry for ``key``."""
    fd = os.open(path, _READ_FLAGS)  # no symlinks; a FIFO opens without waiting
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _BadEntry("not a regular file")
        if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
            raise _BadEntry(f"owned by another user (uid {st.st_uid})")
        limit = max_size()
        if st.st_size < _HEAD or (limit > 0 and st.st_size > limit):
            raise _BadEntry(f"{st.st_size} bytes: too small or above the size limit")
        head = _read_at_most(fd, _HEAD)  # the header first: junk is refused unread
        if not head.startswith(_MAGIC):
            raise _BadEntry("bad header: not a minijax cache entry")
        recorded = head[len(_MAGIC):len(_MAGIC) + 64].decode("ascii", "replace")
        if len(head) != _HEAD or recorded != key or head[_HEAD - 33:_HEAD - 32] != b"\n":
            raise _BadEntry(f"it records the key {recorded[:16]}..., not {key[:16]}...")
        payload = _read_at_most(fd, st.st_size - _HEAD + 1)  # one more shows it grew
        if _HEAD + len(payload) != st.st_size:
            raise _BadEntry("its size changed while it was read")
        if _checksum(key, payload) != head[_HEAD - 32:_HEAD]:
            raise _BadEntry("checksum mismatch: damaged")
        _touch(fd)
        return payload
    finally:
        os.close(fd)


def _read_at_most(fd: int, size: int) -> bytes:
    """Up to ``size`` bytes from ``fd`` (fewer only at the end of the file)."""
    chunks, left = [], size
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 24))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _touch(fd: int) -> None:
    """Mark an entry as just used (its modification time orders eviction)."""
    if os.utime in os.supports_fd:
        try:
            os.utime(fd)
        except OSError as e:
            logger.debug("compilation cache: cannot update the time of an entry: %s", e)


def reset() -> None:
    """Forget what this process learned about cache directories (which were checked for
    other users' write access), so the next use starts afresh; entries stay on disk."""
    _checked_dirs.clear()


def _check_directory(directory: str) -> None:
    """Warn, once per directory, when users other than this one can write entries."""
    if directory in _checked_dirs or not hasattr(os, "geteuid"):
        return
    st = os.stat(directory)
    _checked_dirs.add(directory)
    problems = []
    if st.st_uid != os.geteuid():
        problems.append(f"is owned by another user (uid {st.st_uid})")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        problems.append(f"is writable by other users (mode {stat.S_IMODE(st.st_mode):o})")
    if problems:
        logger.warning(
            "compilation cache directory %s %s: cache entries are native code that this "
            "process runs, so whoever can write there can run code as you; use a directory "
            "only you can write to", directory, " and ".join(problems))


def _evict(directory: str, limit: int, keep: str) -> None:
    """Delete the least recently used entries (oldest modification time first, never
    ``keep``) until the entries fit in ``limit`` bytes; also remove temporary files
    that writers left behind long ago.

    Only files this cache wrote count or are removed: a name it gives (64 hex digits
    and ``.xla``, or a temporary file's name) and content that starts with its magic
    (a temporary file may still be empty). Other files in the directory are the
    user's and are left alone."""
    try:
        entries, now = [], time.time()
        with os.scandir(directory) as it:
            for e in it:
                entry = _ENTRY_NAME.fullmatch(e.name)
                if not entry and not _TMP_NAME.fullmatch(e.name):
                    continue
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if not stat.S_ISREG(st.st_mode):
                    continue
                path = os.path.join(directory, e.name)
                if entry:
                    entries.append((st.st_mtime_ns, e.name, st.st_size))
                elif now - st.st_mtime > _STALE_TMP_SECONDS and \
                        (st.st_size == 0 or _has_magic(path)):
                    _unlink(path)
        # Sizes come from one directory listing; a file is opened (to check that it is
        # this cache's) only when the entries are over the limit, oldest first, so a put
        # costs no reads of the other entries while the cache fits.
        total = sum(size for _, _, size in entries)
        for _, name, size in sorted(entries):
            if total <= limit:
                break
            if name == keep:
                continue
            path = os.path.join(directory, name)
            total -= size
            if not _has_magic(path):
                continue  # the user's file: it does not count and stays
            _unlink(path)
            logger.debug("compilation cache: evicted %s (%d bytes) to stay within %d bytes",
                         name, size, limit)
    except _IO_ERRORS as e:
        logger.warning("compilation cache: cannot evict entries in %s: %s", directory, e)


def _has_magic(path: str) -> bool:
    """Whether the regular file at ``path`` starts with this cache's magic (reads only that)."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and \
            _read_at_most(fd, len(_MAGIC)) == _MAGIC
    except OSError:
        return False
    finally:
        os.close(fd)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass  # another process removed it first
