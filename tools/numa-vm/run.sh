#!/usr/bin/env bash
# make test-numa-vm: boot emulated multi-node NUMA guests (QEMU, TCG) and run perfprobe's NUMA
# checks inside them. Installs what it needs (Debian packages, a Debian kernel's vmlinuz) when
# missing; caches under .vm/. Extra arguments go to numa_vm.py (e.g. --shape two-nodes).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache="$root/.vm"
py="${PYTHON:-$root/.venv/bin/python}"
if [ ! -x "$py" ]; then
    echo "numa-vm: $py is missing: run 'make test' (or pip install -e '.[test]' into .venv) first" >&2
    exit 2
fi
"$py" -m pytest -q -p no:cacheprovider "$here/test_harness.py" >&2   # the harness itself, < 5 s
bash "$here/install_deps.sh" "$cache"
exec "$py" "$here/numa_vm.py" --cache "$cache" "$@"
