#!/usr/bin/env bash
# Debian's Slurm (slurmctld, slurmd, slurm-client), munge and node_exporter, when missing.
# Installing does not start them: tools/slurm/cluster.py starts its own, in a temporary folder.
set -euo pipefail
missing=()
for pair in slurmctld:slurmctld slurmd:slurmd srun:slurm-client munged:munge prometheus-node-exporter:prometheus-node-exporter; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || [ -x "/usr/sbin/${pair%%:*}" ] || missing+=("${pair#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing: ${missing[*]}"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -q
    # policy-rc.d 101: the packages' own services are not started (the test starts its own daemons)
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null && $SUDO chmod +x /usr/sbin/policy-rc.d
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
    $SUDO rm -f /usr/sbin/policy-rc.d
fi
