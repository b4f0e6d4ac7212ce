# The two commands of the README: `make demo` and `make test`. Both create .venv themselves.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
# make demo: the paper's comparison (Figs. 5-6) on a mesh: the sim backend with the shared 802.11
# DCF medium (experiments/demo-mesh.yaml; 45-50 s of CPU, 3.6-4.3 minutes on the shared 2 cores
# at load average 13-17), then its numbers, what they mean and what to open (plots/demo.py).
DEMO_EXPERIMENT ?= experiments/demo-mesh.yaml
DEMO_ARGS ?=
DEMO_RUNS ?= runs/demo-mesh
# make demo-loopback: the same paper's experiment as real processes on loopback UDP without a
# medium; its goodput is the speed of the node processes on this CPU, not of a mesh.
LOOPBACK_EXPERIMENT ?= experiments/paper-lossy.yaml
LOOPBACK_ARGS ?= --backend local --repetitions 2

.PHONY: demo demo-loopback test test-fast test-arm64 sim-demo bench mutation clean-venv

# setuptools prints an "Editable installation" notice (not an error, not a deprecation) as a banner
# of asterisks on every editable install; it is silenced by its message, nothing else is.
PIP_INSTALL = PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install --quiet

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(PY) pyproject.toml
	$(PIP_INSTALL) -e .
	touch $@

# netfilterqueue (the kernel extra) is a C extension: it builds where libnetfilter-queue-dev, the
# Python headers and a C compiler are installed (.ci/run installs them). Elsewhere the netns tests
# skip and say why, unless ASPAN_REQUIRE_ROOT_TESTS=1 makes them fail.
$(VENV)/.installed-test: $(PY) pyproject.toml
	$(PIP_INSTALL) -e '.[test,cluster]'
	$(PIP_INSTALL) -e '.[kernel]' || echo "make: netfilterqueue was not built (needs libnetfilter-queue-dev, python3-dev, a C compiler): the netns backend tests will skip"
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(VENV)/bin/aspan run $(DEMO_EXPERIMENT) $(DEMO_ARGS)
	$(PY) -m plots.demo $(DEMO_RUNS)

demo-loopback: $(VENV)/.installed
	$(VENV)/bin/aspan run $(LOOPBACK_EXPERIMENT) $(LOOPBACK_ARGS)

sim-demo: $(VENV)/.installed
	$(VENV)/bin/aspan run $(LOOPBACK_EXPERIMENT) --backend sim

# Where a test lives says what it needs (tests/conftest.py marks by folder; docs/DESIGN.md, "Tests"):
# tests/<package>/... the unit tests of each module, tests/system/ whole runs in virtual time and the command
# line end to end, tests/loopback/ real node processes on loopback in real time (slow), tests/root/ the netns
# and virtual-Pi tests (root). Measured on the 2-core machine shared with two other jobs (load average 4-7),
# 2026-12-02: the suite without the root tests (pytest -m "not root") 29 minutes; test-fast (the unit
# tests of the protocol cores aspan, etx, tcp_user and routing, and the layer rule) 2.5; as root the netns
# and virtual-Pi tests run instead of skipping and add well over 10 minutes
# (tests/root/test_deploy_vpi.py alone took more than 8).
CORE_TESTS = tests/aspan tests/etx tests/tcp_user tests/routing tests/test_layers.py tests/test_cores.py

test: $(VENV)/.installed-test
	@echo "make test: the whole suite, takes about 30 minutes when not root, well over 20 as root (make test-fast: about 3)"
	$(PY) -m pytest -q $(PYTEST_ARGS)

test-fast: $(VENV)/.installed-test
	@echo "make test-fast: the unit tests of the cores (not root and not slow and not system), takes about 3 minutes"
	$(PY) -m pytest -q -m "not root and not slow and not system" $(CORE_TESTS) $(PYTEST_ARGS)

# the arm64 Raspberry Pi OS virtual Pis (tests/root/test_deploy_vpi_arm64.py): root, debootstrap,
# qemu-user-static; 25-40 minutes on 2 cores (the base root once per machine, a setup under qemu)
test-arm64: $(VENV)/.installed-test
	ASPAN_ARM64_PIS=1 ASPAN_REQUIRE_ROOT_TESTS=1 $(PY) -m pytest -q -s tests/root/test_deploy_vpi_arm64.py $(PYTEST_ARGS)

bench: $(VENV)/.installed
	$(PY) -m bench

# Mutation testing of the cores (docs/MUTATION.md): mutmut, one module at a time under nice -n 19, over
# each module's unit tests. Slow (minutes per module), never in CI. MODULES="routing/forwarding/step.py" for one.
$(VENV)/.installed-mutation: $(VENV)/.installed-test
	$(PIP_INSTALL) -e '.[test,mutation]'
	touch $@

mutation: $(VENV)/.installed-mutation
	$(PY) -m bench mutation $(MODULES)

clean-venv:
	rm -rf $(VENV)
