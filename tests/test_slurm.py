"""perfprobe against the real engines (`make test-slurm`): Slurm's srun, scontrol and health checks,
node_exporter's textfile collector. Runs only with PERFPROBE_SLURM=1 (the Makefile target sets it,
after tools/slurm/install.sh); `make test` skips it.

One slurmctld and three slurmd (n1, n2, n3) on 127.0.0.1; n3's slurmd starts under `taskset -c 0`
(the planted fault: its jobs and health checks get one CPU where the others get two).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools" / "slurm"))

pytestmark = pytest.mark.skipif(os.environ.get("PERFPROBE_SLURM") != "1",
                                reason="needs Slurm and node_exporter: run `make test-slurm`")
FAULT = ["taskset", "-c", "0"]


def say(text):
    print(f"\n[test-slurm] {text}", flush=True)


@pytest.fixture(scope="module")
def cluster():
    from cluster import NODES, Cluster  # tools/slurm/cluster.py

    folder = Path(tempfile.mkdtemp(prefix="perfprobe-slurm-"))
    script = folder / "healthcheck.sh"
    (folder / "textfile").mkdir()
    script.write_text(f"""#!/bin/sh
# HealthCheckProgram: slurmd runs this with SLURMD_NODENAME set
export SLURM_CONF={folder}/slurm.conf PYTHONPATH={REPO}
cd {REPO}
exec {sys.executable} -m perfprobe healthcheck --baseline {folder}/baseline.json --probes host \\
    --prom {folder}/textfile/$SLURMD_NODENAME.prom >> {folder}/log/healthcheck-$SLURMD_NODENAME.log 2>&1
""")
    script.chmod(0o755)
    c = Cluster(folder, healthcheck=script, interval_s=5)
    c.write_config()
    try:
        c.start_munge()
        c.start_ctld()
        for node in NODES:
            c.start_slurmd(node, FAULT if node == "n3" else ())
        c.wait_for(lambda: all(c.state(n).startswith("IDLE") for n in NODES), 90, "three idle nodes")
        say(c.run(["sinfo", "-N"]).stdout)
        yield c
    finally:
        c.stop_all()
        for proc in list(getattr(c, "extra", [])):
            proc.terminate()
            proc.wait(timeout=10)
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
        assert not folder.exists()


def perfprobe(cluster, *args, timeout=240):
    import subprocess

    return subprocess.run([sys.executable, "-m", "perfprobe", *args], cwd=REPO, capture_output=True, text=True,
                          env={**cluster.env(), "PYTHONPATH": str(REPO)}, timeout=timeout)


def test_fanout_fleet_healthcheck_drain_and_resume(cluster):
    reports = cluster.root / "reports"
    done = perfprobe(cluster, "fleet", "run", "--nodes", "3", "--out", str(reports),
                     "--baseline-out", str(cluster.root / "fleet-baseline.json"), "--json", "--", "host")
    say(f"perfprobe fleet run --nodes 3 -- host: exit {done.returncode}\n{done.stderr.strip()}")
    assert sorted(p.name for p in reports.glob("*.json")) == ["n1.json", "n2.json", "n3.json"]
    for node in ("n1", "n2", "n3"):
        assert json.loads((reports / f"{node}.json").read_text())["host"]["slurm_node"] == node
    fleet = json.loads(done.stdout)
    flagged = {o["host"] for g in fleet["groups"] for o in g["outliers"]}
    flagged |= {n["host"] for g in fleet["groups"] for n in g["not_measured"]}
    say(f"fleet outliers: {[(o['host'], o['metric'], o['value'], o['median']) for o in fleet['groups'][0]['outliers']]}")
    assert done.returncode == 1 and flagged == {"n3"}

    # The fleet's baseline becomes the health check's: slurmd runs it every 5 s
    (cluster.root / "fleet-baseline.json").rename(cluster.root / "baseline.json")
    cluster.wait_for(lambda: "DRAIN" in cluster.state("n3"), 90, "n3 drained by the health check")
    reasons = cluster.run(["sinfo", "-R", "-o", "%N|%E"]).stdout
    say(f"sinfo -R:\n{reasons.strip()}")
    assert "n3|perfprobe: usable CPUs 1 vs baseline 2" in reasons
    time.sleep(6)  # one more check interval: the healthy nodes stay as they are
    assert cluster.state("n1") == "IDLE" and cluster.state("n2") == "IDLE"

    # Fault gone: n3's slurmd restarted without taskset; its start-up health check resumes it
    cluster.stop("slurmd-n3")
    cluster.start_slurmd("n3")
    cluster.wait_for(lambda: cluster.state("n3") == "IDLE", 90, "n3 resumed by the health check")
    say(f"after the fault is gone: {cluster.node('n3').split(' State=')[1].split()[0]}; sinfo -R:\n"
        f"{cluster.run(['sinfo', '-R']).stdout.strip()}")


def test_a_drain_someone_else_set_is_left_alone(cluster):
    if not (cluster.root / "baseline.json").exists():
        pytest.skip("needs the baseline of the fan-out test")
    cluster.run(["scontrol", "update", "NodeName=n2", "State=DRAIN", "Reason=maintenance: new DIMMs"])
    time.sleep(12)  # two health-check intervals on a healthy node
    line = cluster.node("n2")
    cluster.run(["scontrol", "update", "NodeName=n2", "State=RESUME"])
    assert "DRAIN" in line and "Reason=maintenance: new DIMMs" in line


def test_node_exporter_serves_the_prom_file(cluster):
    import subprocess

    from cluster import free_port, which

    textfile = cluster.root / "textfile"
    if not list(textfile.glob("*.prom")):
        done = perfprobe(cluster, "host", "--prom", str(textfile / "host.prom"))
        assert done.returncode in (0, 1), done.stderr
    port = free_port()
    exporter = subprocess.Popen([which("prometheus-node-exporter"), f"--web.listen-address=127.0.0.1:{port}",
                                 "--collector.disable-defaults", "--collector.textfile",
                                 f"--collector.textfile.directory={textfile}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cluster.extra = [exporter]
    text = ""
    for _ in range(40):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
                text = answer.read().decode()
            break
        except OSError:
            time.sleep(0.5)
    exporter.terminate()
    exporter.wait(timeout=10)
    cluster.extra = []
    lines = [line for line in text.splitlines() if line.startswith("perfprobe_")]
    say(f"node_exporter served {len(lines)} perfprobe lines, e.g. {lines[:2]}")
    assert any(line.startswith('perfprobe_metric{device="",host=') and 'metric="cpus.usable"' in line for line in lines)
    assert any(line.startswith("perfprobe_verdict{") for line in lines)
    assert "node_textfile_scrape_error 0" in text
