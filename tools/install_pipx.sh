#!/bin/sh
# Debian's pipx, for trying the README's `pipx install .` (issue 14); nothing else needs it.
set -e
command -v pipx >/dev/null 2>&1 && exit 0
if [ "$(id -u)" -eq 0 ]; then apt-get install -y -q pipx; else sudo apt-get install -y -q pipx; fi
