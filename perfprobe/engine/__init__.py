"""The engine: what a probe is (probe.py, declaration.py), which probes there are (registry.py), one
run's settings (config.py), the runner (runner.py: facts, knobs, bind, measure, judge, confirm,
stability) and the results it returns (model.py). Nothing is imported here: each module loads on its
own, so `perfprobe --help` loads only what it needs."""
