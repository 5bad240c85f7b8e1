"""The README's HealthCheckProgram script, taken from the README itself for `make test-slurm`.

The script is the README's ```sh block that starts with `#!/bin/sh` and runs `healthcheck`; the
test changes only the values of its site settings (the `NAME=value` lines it names: where perfprobe,
the baseline, slurm.conf, the textfile and the log are), and every other line runs as written, so
a README that stops working under slurmd (a bare `perfprobe`, no SLURM_CONF) fails the test.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping

README = Path(__file__).resolve().parents[2] / "README.md"
SETTINGS = ("PERFPROBE", "BASELINE", "SLURM_CONF", "PROM", "LOG")


def readme_script(readme: Path = README) -> str:
    """The script's text as the README has it."""
    blocks = re.findall(r"```sh\n(.*?)```", readme.read_text(), flags=re.S)
    found = [b for b in blocks if b.startswith("#!/bin/sh\n") and " healthcheck " in b]
    if len(found) != 1:
        raise ValueError(f"README.md: expected one HealthCheckProgram script, found {len(found)}")
    return found[0]


def with_settings(script: str, values: Mapping[str, str]) -> str:
    """`script` with each setting's value replaced (its comment kept); every setting must be there once."""
    for name in SETTINGS:
        pattern = re.compile(rf"^{name}=\S+", flags=re.M)
        if len(pattern.findall(script)) != 1:
            raise ValueError(f"README.md's script: expected one line {name}=..., found {len(pattern.findall(script))}")
        replacement = f"{name}={values[name]}"
        script = pattern.sub(lambda _m, text=replacement: text, script)
    return script
