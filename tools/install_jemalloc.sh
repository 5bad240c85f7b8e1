#!/usr/bin/env bash
# Install Debian's jemalloc (libjemalloc2) when it is missing, so `perfprobe alloc` has a second
# allocator to find and measure (tests/test_alloc_measure.py, .ci/run). Exit 0 when jemalloc is
# present afterwards; 3 when it cannot be installed here (no apt-get, not root, no network).
set -u
found() { ls /usr/lib/*-linux-gnu/libjemalloc.so.2 /usr/lib64/libjemalloc.so.2 /usr/lib/libjemalloc.so.2 2>/dev/null | head -1; }
if [ -n "$(found)" ]; then echo "jemalloc: $(found)"; exit 0; fi
if ! command -v apt-get >/dev/null; then echo "jemalloc: no apt-get on this host"; exit 3; fi
if [ "$(id -u)" != 0 ]; then SUDO="sudo -n"; else SUDO=""; fi
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends libjemalloc2 >/dev/null 2>&1 || \
  { $SUDO apt-get update -q >/dev/null 2>&1 && \
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends libjemalloc2 >/dev/null 2>&1; }
if [ -n "$(found)" ]; then echo "jemalloc: $(found)"; exit 0; fi
echo "jemalloc: apt-get install libjemalloc2 failed (not root, no network or no such package)"; exit 3
