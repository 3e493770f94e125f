# Set-up and everyday commands. On a fresh Debian machine with Python 3.11, `make demo` and
# `make test` are all you need: they create .venv and install everything.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# torch 2.13.0 (CPU build) is on this machine's disk; an unpinned torch pulls a multi-GB CUDA build.
TORCH_PIN ?= torch==2.13.0

.PHONY: demo test bench accuracy docs clean

$(VENV)/.installed: pyproject.toml setup.py graphguard-startup.pth
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "$(TORCH_PIN)"
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $@

demo: $(VENV)/.installed
	@echo "graphguard run --mode collect examples/ellipse/broken.py  (collect: show every finding, not only the first error)"
	-$(VENV)/bin/graphguard run --mode collect examples/ellipse/broken.py

test: $(VENV)/.installed
	$(PY) -m pytest -q -n 2 tests

# per-step overhead (interleaved, CPU time), then whole clean programs of benchmarks/realbugs
bench: $(VENV)/.installed
	$(PY) benchmarks/overhead.py
	$(PY) benchmarks/programs.py --summary-only

# graphguard, plain PyTorch and detect_anomaly on benchmarks/realbugs; rewrites docs/accuracy.md
accuracy: $(VENV)/.installed
	$(PY) benchmarks/accuracy.py

docs: $(VENV)/.installed
	$(PY) -m graphguard.docs > docs/rules.md
	$(PY) -m graphguard.docs --readme

clean:
	rm -rf $(VENV) graphguard-report build *.egg-info
