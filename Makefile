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

# netfilterqueue (the kernel extra) is a C extension: it builds where libnetfilter-queue-dev, the
# Python headers and a C compiler are installed (.ci/run installs them). Elsewhere the netns tests
# skip and say why, unless ASPAN_REQUIRE_ROOT_TESTS=1 makes them fail.
$(VENV)/.installed-test: $(PY) pyproject.toml
	$(PY) -m pip install --quiet -e '.[test]'
	$(PY) -m pip install --quiet -e '.[kernel]' || echo "make: netfilterqueue was not built (needs libnetfilter-queue-dev, python3-dev, a C compiler): the netns backend tests will skip"
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
