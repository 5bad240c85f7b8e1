"""host measures nothing, so there is nothing to plan: the runner reads the host facts once
(perfprobe.host) for every probe and records them beside the raw numbers. This module is kept so
that every probe package has the same shape."""

from __future__ import annotations
