"""`python -m perfprobe` runs the CLI (the device machine runs the project this way)."""

from perfprobe.cli import console

console()
