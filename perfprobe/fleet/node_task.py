"""One fan-out task (what srun runs on each node): perfprobe's JSON report into OUT/<node>.json and
its stderr into OUT/<node>.err, named by the Slurm node name, written whole (a .part file renamed).

srun's own `--output=%N` names files by host name, which is not the node name where one host runs
several slurmd (and is not always on real clusters); so each task names its own file.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from perfprobe.host.identity import slurm_node_name


def main(argv: list[str]) -> int:
    out_dir, args = Path(argv[0]), list(argv[1:])
    node = slurm_node_name(os.environ) or socket.gethostname()
    report, errors = out_dir / f"{node}.json", out_dir / f"{node}.err"
    part = report.with_suffix(".json.part")
    with open(part, "wb") as out, open(errors, "wb") as err:
        code = subprocess.run([sys.executable, "-m", "perfprobe", *args], stdout=out, stderr=err,
                              stdin=subprocess.DEVNULL).returncode
    os.replace(part, report)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
