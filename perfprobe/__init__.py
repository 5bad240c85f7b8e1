"""perfprobe: measure what makes a program fast on this host, judge it against the host's own facts."""

__version__ = "0.1.0"
