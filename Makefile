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
# The course's thread policy (nlpcourse/threads.py): idle OpenMP threads sleep instead of spinning, in every
# kernel of the book build and of nbval, in the tests and the grader (tests/test_threads.py checks the value).
export OMP_WAIT_POLICY := PASSIVE

.PHONY: book test setup sysdeps clean help gpu-check

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

# The book is built with no network (bubblewrap, new network namespace) wherever bwrap can run. Its chapters
# are executed first, two at a time, into the build's cache (scripts/execute_chapters.py); the build then
# renders them from the cache. Then every chapter and assignment as a notebook that opens in Colab and Binder,
# into the site's launch/ folder (scripts/launch_notebooks.py: the repository from $NLPCOURSE_REPOSITORY or
# _config.yml, the revision from $NLPCOURSE_REVISION or git).
book: setup sysdeps
	@if command -v bwrap >/dev/null 2>&1 && bwrap --dev-bind / / --unshare-net true 2>/dev/null; then \
	  echo "building offline (bubblewrap, no network)"; offline="bwrap --dev-bind / / --unshare-net"; \
	else \
	  echo "bubblewrap not available: building without network isolation"; offline=""; \
	fi; \
	start=$$(date +%s); \
	$$offline $(PY) scripts/execute_chapters.py --jobs 2; \
	$$offline $(VENV)/bin/jupyter-book build . --keep-going -W -n; \
	$(PY) scripts/launch_notebooks.py --out _build/html/launch; \
	echo "== stage book: $$(( $$(date +%s) - start )) s"

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

# ruff (configured in pyproject.toml) first; then nbval re-runs every executed chapter in a fresh kernel and
# compares its outputs with the build's (determinism), two chapters at a time, the longest first, as the
# build ran them: each chapter's cells run on the threads nlpcourse.threads gives them, so the numbers do not
# depend on what runs beside them, and idle OpenMP threads sleep (OMP_WAIT_POLICY above) instead of taking
# the other chapter's core. Then the library's tests, then the grading suite (sandboxed kernels, two at a time);
# in both, the longest test files go first (tests/conftest.py), so that the two workers end together.
test: setup sysdeps book
	$(VENV)/bin/ruff check .
	start=$$(date +%s); chapters=$$($(PY) scripts/executed_chapters.py --out _build/executed); \
	$(PY) -m pytest -n 2 --dist loadfile $$chapters \
	  --nbval --nbval-current-env --nbval-cell-timeout=3600 --nbval-sanitize-with tests/nbval_sanitize.cfg; \
	echo "== stage nbval: $$(( $$(date +%s) - start )) s"
	start=$$(date +%s); $(PY) -m pytest -n 2 --dist loadfile -m "not grading" tests $(wildcard solutions) \
	  --durations=15; echo "== stage library: $$(( $$(date +%s) - start )) s"
	start=$$(date +%s); $(PY) -m pytest -n 2 --dist loadfile -m grading tests $(wildcard solutions) \
	  --durations=15; echo "== stage grading: $$(( $$(date +%s) - start )) s"

# On a machine with CUDA: every assignment graded on CUDA and the gpu-marked tests run (scripts/gpu_check.py),
# the results written to benchmarks/results/gpu.json. Without CUDA, a dry run on the CPU that writes nothing.
# It runs on the lent GPU machine's own Python (no .venv there): see README.md, "GPU".
GPU_PY := $(if $(wildcard $(PY)),$(PY),$(PYTHON))
gpu-check:
	$(GPU_PY) scripts/gpu_check.py --json benchmarks/results/gpu.json

clean:
	rm -rf _build .pytest_cache book/_vendor
