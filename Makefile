# Two commands do everything on a fresh machine:
#   make book   set up .venv, install, build the whole book (every chapter executed, offline) into _build/html
#   make test   same set-up, build the book (cached), then the linter and the whole test suite
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
VENDOR := book/_vendor/.stamp
# No progress bars in the built book: their timings would change the pages on every build.
export NLPCOURSE_PROGRESS := 0
export PYTHONHASHSEED := 0

.PHONY: book test setup sysdeps clean help

help:
	@echo "make book   build the book into _build/html (sets up .venv first)"
	@echo "make test   run the whole test suite (sets up .venv, builds the book first)"

setup: $(STAMP) $(VENDOR)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[all]'
	@touch $@

$(VENDOR): package.json package-lock.json scripts/vendor_js.py scripts/widgets_setup.js
	npm ci --no-audit --no-fund --loglevel=error
	$(PY) scripts/vendor_js.py
	@touch $@

# The book is built with no network (bubblewrap, new network namespace) wherever bwrap can run.
book: setup sysdeps
	@if command -v bwrap >/dev/null 2>&1 && bwrap --dev-bind / / --unshare-net true 2>/dev/null; then \
	  echo "building offline (bubblewrap, no network)"; \
	  bwrap --dev-bind / / --unshare-net $(VENV)/bin/jupyter-book build . --keep-going -W -n; \
	else \
	  echo "bubblewrap not available: building without network isolation"; \
	  $(VENV)/bin/jupyter-book build . --keep-going -W -n; \
	fi

# Installed when missing and we may (root with apt-get); otherwise the browser test skips outside CI.
sysdeps:
	@missing=""; command -v bwrap >/dev/null 2>&1 || missing="$$missing bubblewrap"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "missing Debian packages (install them for the full test suite):$$missing"; fi; \
	fi

# ruff (configured in pyproject.toml) first; then nbval re-runs every executed chapter and compares
# its outputs with the build's (determinism), one chapter at a time and alone on the machine, as the
# build ran it: a chapter's two-thread training cell that shares the two cores with other tests slows
# many times over (the word2vec chapter's CBOW cell ran past nbval's 900 s timeout). Then the library's
# tests, then the grading suite (sandboxed kernels, two at a time).
test: setup sysdeps book
	$(VENV)/bin/ruff check .
	$(PY) scripts/executed_chapters.py --out _build/executed
	$(PY) -m pytest _build/executed/book \
	  --nbval --nbval-current-env --nbval-cell-timeout=900 --nbval-sanitize-with tests/nbval_sanitize.cfg
	$(PY) -m pytest -n 2 --dist loadfile -m "not grading" tests solutions --durations=15
	$(PY) -m pytest -n 2 --dist loadfile -m grading tests solutions --durations=15

clean:
	rm -rf _build .pytest_cache book/_vendor
