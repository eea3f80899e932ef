# Two entry points do all set-up on a fresh machine:
#   make demo   audit and compare two shipped ShapeWorld checkpoints (one with a planted weakness; --train retrains)
#   make test   run the test suite (slow tests excluded; `make test-slow` runs them)
#   make docs   build the documentation site into site/ (strict: any warning fails)
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.advaudit-installed
# KServe (the endpoint tests' second server) in an environment of its own beside the venv: its pins clash with
# MLServer's (pyproject.toml, extra `kserve`); it reads torch and the rest from $(VENV) through a .pth file
KSERVE_VENV ?= .venv-kserve
KSERVE_PIN := $(shell grep -o '"kserve==[0-9.]*"' pyproject.toml | tr -d '"')
KSERVE_STAMP := $(KSERVE_VENV)/.installed
FMNIST_DIR ?= /usr/share/datasets/fashion-mnist
# Mitsuba's CPU renderer (world=meshes) JIT-compiles with libLLVM >= 16 (Debian 12 ships 14/15,
# which fail with "Cannot select: fminimum"); advaudit points DRJIT_LIBLLVM_PATH at the newest one
LLVM_PACKAGE ?= libllvm19
LLVM_OK := $(wildcard /usr/lib/*/libLLVM-1[6-9].so /usr/lib/*/libLLVM-[2-9][0-9].so /usr/lib/libLLVM-1[6-9].so)
# One thread per process on the 2-core default machine: torch sets its own count at start-up
# (advaudit.runtime); BLAS/OpenMP pools must not oversubscribe next to it.
export OMP_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1
export OPENBLAS_NUM_THREADS ?= 1
export WANDB_MODE ?= offline
export WANDB_SILENT ?= true

.PHONY: demo test test-slow docs venv kserve data browser clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev,launchers,docs]'
	@touch $(STAMP)

kserve: $(KSERVE_STAMP)

$(KSERVE_STAMP): pyproject.toml $(STAMP)
	@test -x $(KSERVE_VENV)/bin/python || $(PY) -m venv $(KSERVE_VENV)
	$(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' \
	  > "$$($(KSERVE_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/advaudit-base.pth"
	@# a registry that cannot serve KServe's pins costs the KServe endpoint tests (they are skipped, said here), not the suite
	$(KSERVE_VENV)/bin/python -m pip install -q --disable-pip-version-check '$(KSERVE_PIN)' && touch $(KSERVE_STAMP) \
	  || echo "KServe's environment ($(KSERVE_VENV)) could not be installed: the KServe endpoint tests will be skipped"

data:
	@if [ ! -f $(FMNIST_DIR)/train-images-idx3-ubyte.gz ]; then \
	  echo "Fashion-MNIST missing: installing Debian package dataset-fashion-mnist"; \
	  apt-get update -qq && apt-get install -y -qq dataset-fashion-mnist; \
	fi
ifeq ($(LLVM_OK),)
	@echo "Mitsuba (world=meshes) needs libLLVM >= 16: installing Debian package $(LLVM_PACKAGE)"
	apt-get update -qq && apt-get install -y -qq $(LLVM_PACKAGE)
endif

demo: venv data
	$(PY) -m advaudit.demo

test: venv kserve data
	$(PY) -m pytest -q

# the browser check of comparison.html (tests/compare/test_verdict_and_gate.py) needs a headless Chromium
browser:
	@if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then \
	  echo "headless Chromium missing: installing Debian package chromium"; \
	  apt-get update -qq && apt-get install -y -qq chromium; \
	fi

test-slow: venv kserve data browser
	$(PY) -m pytest -q -m slow

docs: venv
	$(PY) -m mkdocs build --strict

clean:
	rm -rf outputs multirun wandb lightning_logs .pytest_cache site
