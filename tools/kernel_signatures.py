"""Record the kernels each CPU probe compiles in `--quick`, with their argument types and compile
times, into perfprobe/kernels/kernel_signatures.json (what kernels/warmup.py compiles ahead).

Run after changing a kernel's arguments, or adding one: `python tools/kernel_signatures.py`. Each
probe runs `perfprobe PROBE --quick` once in an empty numba cache of its own; the kernels it left
in that cache are its list. Then each kernel is compiled once more, alone in a fresh cache, to time
it (the warm-up balances its children on these times). A kernel left out here is not lost: it
compiles at its first call, as every kernel did before (tests/test_warmup.py checks the file names
only kernels that exist).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "perfprobe" / "kernels" / "kernel_signatures.json"

LIST_CACHED = r'''
import importlib, json, pkgutil, sys
import perfprobe.kernels as K
from numba.core.registry import CPUDispatcher
from perfprobe.kernels.warmup import encode
rows = []
for m in pkgutil.iter_modules(K.__path__):
    try:
        mod = importlib.import_module(f"perfprobe.kernels.{m.name}")
    except Exception:
        continue
    for name, obj in sorted(vars(mod).items()):
        if isinstance(obj, CPUDispatcher) and obj.__module__ == mod.__name__ and getattr(obj, "_cache", None):
            for key in obj._cache._cache_file._load_index():
                sig = [encode(t) for t in key[0]]
                if None not in sig:
                    rows.append([mod.__name__, name, sig])
print(json.dumps(rows))
'''

TIME_ONE = r'''
import importlib, json, sys, time
from perfprobe.kernels.warmup import decode
module, name, sig = json.loads(sys.argv[1])
d = getattr(importlib.import_module(module), name)
t = time.perf_counter(); d.compile(tuple(decode(x) for x in sig)); print(time.perf_counter() - t)
'''


def _python(code: str, cache: str, *args: str) -> str:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    return subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout


def cpu_probes() -> list[str]:
    """The registry's probes that need no GPU (the GPU probes' kernels are cupy's, not numba's)."""
    sys.path.insert(0, str(ROOT))
    from perfprobe.engine.registry import all_probe_names, declaration

    return [name for name in all_probe_names() if not declaration(name).gpu and name != "host"]


def main() -> int:
    probes: dict[str, list[list[object]]] = {}
    for probe in cpu_probes():
        with tempfile.TemporaryDirectory(prefix="perfprobe-sigs-") as cache:
            done = subprocess.run([sys.executable, "-m", "perfprobe", probe, "--quick", "--json"], cwd=ROOT,
                                  env={**os.environ, "NUMBA_CACHE_DIR": cache}, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
            if done.returncode not in (0, 1):
                print(f"{probe}: perfprobe {probe} --quick exited {done.returncode}: its kernels as far as it got")
            rows = json.loads(_python(LIST_CACHED, cache))
        timed = []
        for row in rows:
            with tempfile.TemporaryDirectory(prefix="perfprobe-sigs-") as cache:
                timed.append([*row, round(float(_python(TIME_ONE, cache, json.dumps(row))), 3)])
        probes[probe] = timed
        print(f"{probe}: {len(timed)} kernels, {sum(r[3] for r in timed):.1f} s to compile one by one")
    OUT.write_text(json.dumps({"about": "tools/kernel_signatures.py: the kernels each probe's --quick "
                               "run compiles, with their argument types and compile seconds",
                               "probes": probes}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
