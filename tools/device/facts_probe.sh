#!/usr/bin/env bash
# First look at the H200 machine: facts the verdict rules and the many-core work depend on.
# Run from the repo root on the device machine; writes $OUT/facts.txt.
set -u
exec > >(tee "$OUT/facts.txt") 2>&1
echo "== lscpu"; lscpu | head -30
echo "== nproc $(nproc)"; grep -c processor /proc/cpuinfo
echo "== numba threading layers"
python3 - <<'PY'
import numba, os
print("numba", numba.__version__)
for layer in ("tbb", "omp", "workqueue"):
    try:
        from numba.np.ufunc import parallel
        parallel._check_tbb_version_compatible if layer == "tbb" else None
    except Exception as e:
        print(layer, "check failed", e)
try:
    import numba.np.ufunc.tbbpool  # noqa
    print("tbb pool importable")
except Exception as e:
    print("tbb pool:", e)
try:
    import numba.np.ufunc.omppool  # noqa
    print("omp pool importable")
except Exception as e:
    print("omp pool:", e)
PY
echo "== memlock: cudaHostAlloc 1 GiB under a 1 MiB RLIMIT_MEMLOCK"
cat > /tmp/pin.py <<'PY'
import resource, sys
import cupy
print("RLIMIT_MEMLOCK", resource.getrlimit(resource.RLIMIT_MEMLOCK))
for what in ("hostalloc", "register", "mlock"):
    try:
        if what == "hostalloc":
            p = cupy.cuda.runtime.hostAlloc(1 << 30, 0); cupy.cuda.runtime.freeHost(p)
        elif what == "register":
            import numpy as np
            a = np.ones(1 << 30, dtype=np.uint8)
            cupy.cuda.runtime.hostRegister(a.ctypes.data, a.nbytes, 0); cupy.cuda.runtime.hostUnregister(a.ctypes.data)
        else:
            import ctypes, mmap
            libc = ctypes.CDLL(None, use_errno=True)
            m = mmap.mmap(-1, 1 << 30)
            buf = (ctypes.c_char * (1 << 30)).from_buffer(m)
            r = libc.mlock(ctypes.addressof(buf), ctypes.c_size_t(1 << 30))
            err = ctypes.get_errno(); del buf; m.close()
            if r != 0: raise OSError(err, "mlock failed")
        print(what, "1 GiB: OK")
    except Exception as e:
        print(what, "1 GiB: FAILED", type(e).__name__, str(e)[:200])
PY
python3 /tmp/pin.py
prlimit --memlock=1048576:1048576 python3 /tmp/pin.py
echo "== as non-root (nobody) with 1 MiB memlock"
chmod 755 /tmp; chmod 644 /tmp/pin.py
runuser -u nobody -- prlimit --memlock=1048576:1048576 python3 /tmp/pin.py 2>&1 | tail -5 || true
echo "== nvidia-smi"; nvidia-smi --query-gpu=name,driver_version,clocks.max.mem,clocks.mem,memory.total,memory.used,utilization.gpu --format=csv
nvidia-smi topo -m 2>&1 | head -5
echo "== thp"; cat /sys/kernel/mm/transparent_hugepage/enabled; ls -la /sys/kernel/mm/transparent_hugepage/enabled
echo "== cpu caches"; for i in 0 1 2 3; do d=/sys/devices/system/cpu/cpu0/cache/index$i; echo "$(cat $d/level) $(cat $d/type) $(cat $d/size) $(cat $d/coherency_line_size)"; done
cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list
echo "== gcc/omp"; gcc --version | head -1; echo 'int main(){return 0;}' > /tmp/t.c && gcc -fopenmp /tmp/t.c -o /tmp/t && echo openmp ok
ls /usr/lib/x86_64-linux-gnu/ | grep -E "jemalloc|tcmalloc|mimalloc" || echo "no alt allocators"
python3 -c "import uvloop; print('uvloop', uvloop.__version__)" 2>&1
