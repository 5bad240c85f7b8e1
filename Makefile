# perfprobe: `make run` sets up .venv and runs every probe; `make test` runs the test suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# On a host with an NVIDIA driver, `make run` also installs cupy for the driver's CUDA major version.
GPU_EXTRA := $(shell $(PYTHON) tools/gpu_extra.py 2>/dev/null)

.PHONY: run test lint bench bench-manycore bench-verdicts bench-compare bench-planted bench-speed completions test-numa-vm test-html test-slurm readme clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# --no-compile: pip byte-compiles every installed module (scipy's, numba's, ...) up front, 10 of a
# fresh clone's 31 s install on the 2-vCPU EPYC guest (2026-12-06); Python compiles what it imports
# at first import instead.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --no-compile -e '.$(if $(GPU_EXTRA),[$(GPU_EXTRA)])'
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --no-compile -e '.[test$(if $(GPU_EXTRA),$(comma)$(GPU_EXTRA))]'
	touch $@ $(VENV)/.installed

comma := ,

## run: install into .venv, compile the kernels ahead (perfprobe warmup), and run every probe (exit 0 on pass/skip, 1 on warnings only)
run: $(VENV)/.installed
	$(BIN)/perfprobe warmup
	$(BIN)/perfprobe all || [ $$? -eq 1 ]

## lint: ruff (style, and numba/cupy/NVML kept in kernels/ and probes/*/measure.py) and mypy
lint: $(VENV)/.installed-test
	$(BIN)/ruff check perfprobe tests bench tools
	$(BIN)/mypy

## test: install the test extras into .venv, lint, and run the suite
test: lint
	$(BIN)/python -m pytest -q -p no:cacheprovider

## bench: native references beside perfprobe's kernels, and the --help start-up time
bench: $(VENV)/.installed-test
	$(BIN)/python bench/run_all.py

## bench-manycore: latency per level and the DRAM read/triad thread sweep beside C (OpenMP bound one a core), core-to-core pairs beside C
bench-manycore: $(VENV)/.installed-test
	$(BIN)/python bench/run_all.py --manycore

## bench-verdicts: run `perfprobe all --quick` N times (default 10) and count how often each finding fires
N ?= 10
bench-verdicts: $(VENV)/.installed
	$(BIN)/python tools/verdict_stability.py --runs $(N) -- $(ARGS)

## bench-compare: run `perfprobe all --quick` N times (default 10) and `perfprobe compare` every pair of runs: false regressions per pair (ARGS=--require-gpu; COMPARE_FLAGS=--ordered; the runs stay in BENCH_RUNS)
BENCH_RUNS ?= bench/build/compare-runs
bench-compare: $(VENV)/.installed
	$(BIN)/python tools/compare_stability.py --runs $(N) --out $(BENCH_RUNS) --md docs/results/compare-stability.md $(COMPARE_FLAGS) -- $(ARGS)

## bench-planted: slow each key figure by 1.05-1.30x in the runs bench-compare kept (BENCH_RUNS), replay, and print the smallest change compare and the health check find (PLANTED_FLAGS)
bench-planted: $(VENV)/.installed
	$(BIN)/python tools/planted_changes.py --runs $(BENCH_RUNS) --md docs/results/compare-stability.md $(PLANTED_FLAGS)

## bench-speed: a cold (empty numba cache) and WARM=3 warm `all --quick`, a warm health check and `--help`, profiled per probe and stage, into docs/benchmarks.md (ARGS=--require-gpu; SPEED_FLAGS=--fresh-clone times `make run` on a clone)
WARM ?= 3
bench-speed: $(VENV)/.installed
	$(BIN)/python tools/bench_speed.py --warm $(WARM) --md docs/benchmarks.md $(SPEED_FLAGS) -- $(ARGS)

## completions: regenerate bash, zsh and fish completions from the CLI
completions: $(VENV)/.installed
	$(BIN)/python -m perfprobe.cli.completions completions

## test-numa-vm: boot emulated multi-node NUMA guests (QEMU, TCG) and run the NUMA checks inside
test-numa-vm: $(VENV)/.installed-test
	bash tools/numa-vm/run.sh

## test-slurm: a real Slurm (slurmctld + 3 slurmd on 127.0.0.1) and node_exporter: fan-out, fleet, drain, resume
test-slurm: $(VENV)/.installed-test
	bash tools/slurm/install.sh
	PERFPROBE_SLURM=1 $(BIN)/python -m pytest -v -s -p no:cacheprovider tests/test_slurm.py

## test-html: the HTML report in headless Chromium (installs Debian's chromium + chromium-driver when missing)
test-html: $(VENV)/.installed-test
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	    chromium chromium-driver; } || echo "test-html: could not install chromium; the browser test will skip"
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/test_html_browser.py

clean:
	rm -rf $(VENV) bench/build .pytest_cache

## readme: gather each probe's verdict-rule table from docs/probes/ into the README
readme:
	$(PYTHON) tools/readme_rules.py
