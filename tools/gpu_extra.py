"""Print the pip extra that brings cupy for this host's NVIDIA driver ("gpu" or "gpu-cuda13"), or nothing.

Used by the Makefile so that `make run` on a GPU host installs the cupy wheel that matches the driver.
"""

import re
import shutil
import subprocess

if shutil.which("nvidia-smi"):
    try:
        out = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    match = re.search(r"CUDA Version:\s*(\d+)", out)
    if match:
        print("gpu-cuda13" if int(match.group(1)) >= 13 else "gpu")
