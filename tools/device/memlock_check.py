"""What RLIMIT_MEMLOCK limits on a CUDA host (issue 12 item 0): run under `prlimit --memlock=...`,
as root and as an ordinary user, it tries mlock, cudaHostAlloc and cudaHostRegister of a few sizes
and prints one JSON line per attempt: {"what", "bytes", "ok", "error", "uid", "memlock_soft"}."""

from __future__ import annotations

import ctypes
import json
import os
import resource
import sys


def attempt(what: str, nbytes: int, fn) -> None:  # type: ignore[no-untyped-def]
    soft, _hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    try:
        fn(nbytes)
        ok, error = True, ""
    except Exception as exc:  # noqa: BLE001 - the failure is the measurement
        ok, error = False, f"{type(exc).__name__}: {exc}"[:200]
    print(json.dumps({"what": what, "bytes": nbytes, "ok": ok, "error": error, "uid": os.getuid(),
                      "memlock_soft": None if soft == resource.RLIM_INFINITY else soft}), flush=True)


def mlock(nbytes: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(nbytes)
    if libc.mlock(buf, ctypes.c_size_t(nbytes)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    libc.munlock(buf, ctypes.c_size_t(nbytes))


def main() -> int:
    import cupy
    import numpy as np

    def host_alloc(nbytes: int) -> None:
        ptr = cupy.cuda.runtime.hostAlloc(nbytes, 0)
        ctypes.memset(ptr, 1, nbytes)  # touch every page
        cupy.cuda.runtime.freeHost(ptr)

    def host_register(nbytes: int) -> None:
        arr = np.ones(nbytes, dtype=np.uint8)
        cupy.cuda.runtime.hostRegister(arr.ctypes.data, nbytes, 0)
        cupy.cuda.runtime.hostUnregister(arr.ctypes.data)

    def pinned_pool(nbytes: int) -> None:
        mem = cupy.cuda.alloc_pinned_memory(nbytes)
        del mem

    sizes = [512 << 10, 16 << 20, 1 << 30]
    for size in sizes:
        attempt("mlock", size, mlock)
    for size in sizes:
        attempt("cudaHostAlloc", size, host_alloc)
        attempt("cudaHostRegister", size, host_register)
    attempt("cupy.alloc_pinned_memory", 1 << 30, pinned_pool)
    return 0


if __name__ == "__main__":
    sys.exit(main())
