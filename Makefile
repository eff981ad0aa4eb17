# Two commands: `make html` builds the book, `make test` runs every test.
# Both create .venv/ and install everything they need on first use.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup html test bench serve clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -c constraints.txt -e '.[test]'
	touch $@

setup: $(STAMP)

html: $(STAMP)
	$(PY) tools/build_book.py

test: html
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) -m mha_book.bench

serve:
	@test -f _build/html/index.html || { echo "run 'make html' first"; exit 1; }
	$(PY) -m http.server --bind 127.0.0.1 --directory _build/html 8000

clean:
	rm -rf _build
