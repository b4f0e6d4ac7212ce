# The two commands of the README: `make demo` and `make test`. Both create .venv themselves.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
DEMO_EXPERIMENT ?= experiments/paper-lossy.yaml
DEMO_ARGS ?= --backend local --repetitions 2

.PHONY: demo test sim-demo bench clean-venv

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(PY) pyproject.toml
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: $(PY) pyproject.toml
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(VENV)/bin/aspan run $(DEMO_EXPERIMENT) $(DEMO_ARGS)

sim-demo: $(VENV)/.installed
	$(VENV)/bin/aspan run $(DEMO_EXPERIMENT) --backend sim

test: $(VENV)/.installed-test
	$(PY) -m pytest -q $(PYTEST_ARGS)

bench: $(VENV)/.installed
	$(PY) -m bench

clean-venv:
	rm -rf $(VENV)
