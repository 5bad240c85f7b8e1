"""Kernels: the only modules that import numba or cupy. Each returns numbers, nothing else.

Importing this package makes sure numba's `cache=True` kernels have somewhere to cache: the
package directory when it is writable, else a user cache directory, else (no writable home: a
container, a CI runner, a Slurm job, `nobody`) a private temporary directory, said once on stderr
and removed when the process that made it exits.
Never fail a measurement over a cache: when no directory at all can be made, caching is switched
off and the kernels compile on every run.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

CACHE_NOTE: str | None = None  # what was done instead of a lasting cache, for whoever asks


def _ensure_numba_cache_dir() -> None:
    global CACHE_NOTE
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    here = Path(__file__).resolve().parent
    if os.access(here, os.W_OK):
        return
    for target in _user_cache_dirs():
        if _usable_dir(target):
            os.environ["NUMBA_CACHE_DIR"] = str(target)
            return
    try:
        private = tempfile.mkdtemp(prefix="perfprobe-numba-")
    except OSError:
        CACHE_NOTE = "no writable directory for numba's cache: kernels are compiled on every run"
        _disable_numba_cache()
    else:
        os.environ["NUMBA_CACHE_DIR"] = private  # children (ipc's worker, the health check's) share it
        atexit.register(shutil.rmtree, private, ignore_errors=True)  # nothing of a run outlives it
        CACHE_NOTE = (f"no writable cache directory (home: {os.environ.get('HOME') or 'unset'}): numba "
                      f"caches in {private} for this run only; set NUMBA_CACHE_DIR to keep compiled kernels")
    sys.stderr.write(f"perfprobe: note: {CACHE_NOTE}\n")


def _user_cache_dirs() -> list[Path]:
    bases = [os.environ.get("XDG_CACHE_HOME")]
    try:
        bases.append(str(Path.home() / ".cache"))
    except (KeyError, RuntimeError):  # no HOME and no passwd entry
        pass
    return [Path(base) / "perfprobe" / "numba" for base in bases if base]


def _usable_dir(target: Path) -> bool:
    try:
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=target):  # can a file be made there (read-only mounts too)
            pass
    except OSError:
        return False
    return True


def _disable_numba_cache() -> None:
    """Last resort: `cache=True` kernels compile uncached instead of failing to decorate."""
    from numba.core import dispatcher

    enable = dispatcher.Dispatcher.enable_caching

    def enable_or_skip(self: dispatcher.Dispatcher) -> None:
        try:
            enable(self)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            pass

    dispatcher.Dispatcher.enable_caching = enable_or_skip  # type: ignore[method-assign]


_ensure_numba_cache_dir()
