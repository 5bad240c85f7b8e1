"""What `perfprobe toy` declares: its options (with their ranges), headline and key figures, docs page."""

from perfprobe.engine.declaration import Declared, ProbeOption

DECLARED = Declared(
    name="toy", help="Toy: a probe defined inside tests/, made to show what registering one gives.",
    options=(
        ProbeOption("--width", "count", "Counters to update, {minimum} to {maximum} (default 8).", minimum=1, maximum=64),
        ProbeOption("--span", "bytes", "Bytes the counters span, at least {minimum}, e.g. 64K.", minimum=4 << 10),
    ),
    headline=("ns_per_update", "width"),
    key_figures=("ns_per_update",),
    docs="tests/toy_probe/toy.md",
)
