"""A real Slurm cluster on one machine for `make test-slurm`: munged, one slurmctld and three slurmd
(n1, n2, n3, each `slurmd -N` on 127.0.0.1 with a port of its own), and a node_exporter.

Everything lives in one temporary folder (config, keys, sockets, state, spool, logs) on free high
ports; every daemon is started here, remembered by pid and stopped by pid; the folder is removed.
Nothing is read from or written to /etc/slurm, /etc/munge or /run.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

NODES = ("n1", "n2", "n3")
SBIN = ("/usr/sbin", "/usr/bin", "/sbin", "/bin")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def which(name: str) -> str:
    found = shutil.which(name) or next((f"{d}/{name}" for d in SBIN if os.access(f"{d}/{name}", os.X_OK)), None)
    if not found:
        raise FileNotFoundError(f"{name} is not installed (run tools/slurm/install.sh)")
    return found


class Cluster:
    def __init__(self, root: Path, healthcheck: Path | None = None, interval_s: int = 5) -> None:
        self.root = root
        self.ctld_port = free_port()
        self.node_ports = {n: free_port() for n in NODES}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.healthcheck = healthcheck
        self.interval_s = interval_s
        self.conf = root / "slurm.conf"
        self.socket = root / "munge.socket"

    # configuration
    def write_config(self) -> None:
        for sub in ("state", "log", *(f"spool-{n}" for n in NODES)):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        nodes = "\n".join(f"NodeName={n} NodeHostname=localhost NodeAddr=127.0.0.1 Port={p} CPUs=1 "
                          "RealMemory=500 State=UNKNOWN" for n, p in self.node_ports.items())
        # CYCLE: slurmctld spreads the nodes' checks over the interval instead of starting them all at
        # once (slurm.conf(5)). A real cluster's nodes each have their own CPUs; these three share this
        # machine's, and three checks at once on two CPUs ran past the 40 s deadline (2026-12-05).
        health = (f"HealthCheckProgram={self.healthcheck}\nHealthCheckInterval={self.interval_s}\n"
                  "HealthCheckNodeState=ANY,CYCLE\n") if self.healthcheck else ""
        self.conf.write_text(f"""ClusterName=perfprobe
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={self.ctld_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={self.socket}
CredType=cred/munge
StateSaveLocation={self.root}/state
SlurmdSpoolDir={self.root}/spool-%n
SlurmctldPidFile={self.root}/slurmctld.pid
SlurmdPidFile={self.root}/slurmd-%n.pid
SlurmctldLogFile={self.root}/log/slurmctld.log
SlurmdLogFile={self.root}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmdParameters=config_overrides
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MinJobAge=5
{health}{nodes}
PartitionName=debug Nodes={','.join(NODES)} Default=YES MaxTime=INFINITE State=UP
""")

    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    # daemons
    def _start(self, name: str, argv: Sequence[str]) -> None:
        log = open(self.root / "log" / f"{name}.out", "ab")
        self.procs[name] = subprocess.Popen(list(argv), stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                            env=self.env(), start_new_session=True)

    def start_munge(self) -> None:
        key = self.root / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        self._start("munged", [which("munged"), "-F", "-f", f"--key-file={key}", f"--socket={self.socket}",
                               f"--pid-file={self.root}/munged.pid", f"--log-file={self.root}/log/munged.log",
                               f"--seed-file={self.root}/munged.seed"])
        self._wait(lambda: self.socket.exists(), 20, "munged socket")

    def start_ctld(self) -> None:
        self._start("slurmctld", [which("slurmctld"), "-D", "-i", "-f", str(self.conf)])
        self._wait(lambda: self.run(["scontrol", "ping"]).returncode == 0, 30, "slurmctld")

    def start_slurmd(self, node: str, wrap: Sequence[str] = ()) -> None:
        """slurmd for `node`, optionally under a wrapper (`taskset -c 0`, `prlimit ...`)."""
        self._start(f"slurmd-{node}", [*wrap, which("slurmd"), "-D", "-N", node, "-f", str(self.conf)])

    def stop(self, name: str) -> None:
        proc = self.procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)

    def stop_all(self) -> None:
        for name in [n for n in self.procs if n.startswith("slurmd")] + ["slurmctld", "munged"]:
            self.stop(name)

    # reading it
    def run(self, argv: Sequence[str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return subprocess.run([which(argv[0]), *argv[1:]], env=self.env(), capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def node(self, node: str) -> str:
        return self.run(["scontrol", "show", "node", "-o", node]).stdout.strip()

    def state(self, node: str) -> str:
        line = self.node(node)
        return line.split(" State=")[1].split()[0] if " State=" in line else "?"

    def wait_for(self, test, timeout: float, what: str) -> None:  # noqa: ANN001 - a predicate
        self._wait(test, timeout, what)

    def _wait(self, test, timeout: float, what: str) -> None:  # noqa: ANN001
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if test():
                return
            dead = [n for n, p in self.procs.items() if p.poll() is not None]
            if dead:
                raise RuntimeError(f"{', '.join(dead)} exited while waiting for {what}: {self.logs()}")
            time.sleep(0.5)
        raise TimeoutError(f"no {what} within {timeout:.0f} s: {self.logs()}")

    def logs(self) -> str:
        tails = []
        for path in sorted((self.root / "log").glob("*")):
            lines = path.read_text(errors="replace").strip().splitlines()[-5:]
            tails.append(f"--- {path.name}\n" + "\n".join(lines))
        return "\n".join(tails)


if __name__ == "__main__":  # a quick manual check: start, show sinfo, stop
    import tempfile

    with tempfile.TemporaryDirectory(prefix="perfprobe-slurm-") as folder:
        cluster = Cluster(Path(folder))
        cluster.write_config()
        try:
            cluster.start_munge()
            cluster.start_ctld()
            for n in NODES:
                cluster.start_slurmd(n)
            cluster.wait_for(lambda: all(cluster.state(n).startswith("IDLE") for n in NODES), 60, "idle nodes")
            print(cluster.run(["sinfo", "-N"]).stdout)
            print(cluster.run(["srun", "-N3", "--ntasks-per-node=1", "sh", "-c",
                               "echo $SLURMD_NODENAME $(taskset -pc $$)"]).stdout, file=sys.stdout)
        finally:
            cluster.stop_all()
