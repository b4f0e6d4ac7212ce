"""The layers of docs/DESIGN.md ("Layers"), read from the source: every import, with ``ast``.

Every ``import``/``from ... import`` of every module counts, wherever it is: at the top, inside a
function (a lazy import is still a dependency), under ``if TYPE_CHECKING:``.  A forbidden import
fails with the rule's reason; so does any import cycle between modules.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent


PACKAGES = ("aspan", "etx", "routing", "tcp_user", "experiments", "deploy", "plots", "bench")


#: top-level modules that are not packages: the neutral field declarations and trace files
NEUTRAL = ("fieldspec", "tracefiles")


CORES = ("aspan", "etx", "tcp_user", "routing")


#: a core package's drivers live in a folder of this name (routing/drivers/, etx/drivers/, tcp_user/drivers/):
#: the only modules of a core package that may do I/O.  Every other module of a core package is a core.
DRIVER_FOLDER = "drivers"


APPLICATION = ("experiments", "deploy", "plots", "bench")


#: what a core may not import: sockets, waiting on descriptors, threads, processes, NFQUEUE
IO_MODULES = ("socket", "select", "threading", "subprocess", "netfilterqueue")


#: the names of socket that are pure functions (address text <-> bytes), which a core may import by name
PURE_SOCKET_NAMES = ("inet_aton", "inet_ntoa", "inet_pton", "inet_ntop")


#: calls that open a file: builtin ``open(...)``, ``os.open(...)``, and ``x.open(...)``, ``x.read_text()``...
#: on anything (a ``Path``)
FILE_METHODS = ("open", "read_text", "write_text", "read_bytes", "write_bytes")


@dataclass(frozen=True)
class Rule:
    """Modules under ``importer`` (a package or module prefix) may not import under ``imported``."""

    importer: str
    imported: tuple[str, ...]
    reason: str
    exempt: tuple[str, ...] = ()


def is_driver(module: str) -> bool:
    """A module in a driver folder of a core package (``routing.drivers.udp``)."""
    return DRIVER_FOLDER in module.split(".")[1:]


def is_core(module: str) -> bool:
    return module.split(".")[0] in CORES and not is_driver(module)


DRIVER_REASON = ("a protocol core imports no driver (sockets, threads, NFQUEUE, processes, files), not even its own "
                 "package's: drivers wrap the cores, so the same core runs in the sim, on UDP and on NFQUEUE")


RULES = [
    *(Rule(core, APPLICATION, "a protocol core (no I/O, no command line) knows nothing of the application "
           "layer: experiments, deploy, plots and bench use the cores, never the other way round",
           exempt=(f"{core}.{DRIVER_FOLDER}",)) for core in CORES),
    Rule("deploy", ("experiments", "plots", "bench"), "deploy is the library of Fabric tasks for the Pi mesh; it "
         "knows no runner and no schema (the pi backend and the aspan deploy command live in experiments)"),
    Rule("plots", ("experiments", "deploy", "bench", *CORES), "plots reads only logs (run directories): it works "
         "the same for a run of any backend, written by any version, so it imports nothing that runs a network"),
    *(Rule(n, (*PACKAGES, *(m for m in NEUTRAL if m != n)),
           f"{n} is a neutral module (fieldspec: the field declarations shared by routing.links.loss, "
           "experiments.schema and deploy.inventory; tracefiles: the trace files read by routing.links and "
           "routing.medium and written by aspan trace); it must stay importable by all of them without pulling any in")
      for n in NEUTRAL),
    Rule("experiments", ("bench",), "bench measures the testbed; nothing of the testbed depends on it"),
]


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    mods: dict[str, Path] = {n: ROOT / f"{n}.py" for n in NEUTRAL}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            mods[module_name(path)] = path
    return mods


MODULES = all_modules()


def _resolve(name: str) -> str | None:
    """The longest project module that ``name`` names or lives in (``a.b.c`` -> ``a.b`` if c is a name)."""
    parts = name.split(".")
    while parts:
        cand = ".".join(parts)
        if cand in MODULES:
            return cand
        parts.pop()
    return None


def imports_of(module: str, path: Path) -> list[tuple[str, int]]:
    """(imported project module, line) for every import statement anywhere in the module."""
    tree = ast.parse(path.read_text(), str(path))
    is_pkg = path.name == "__init__.py"
    out: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[:len(base) - node.level + (1 if is_pkg else 0)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            # ``from pkg import sub`` imports the submodule pkg.sub when there is one
            targets = [f"{prefix}.{a.name}" for a in node.names]
        else:
            continue
        for t in targets:
            hit = _resolve(t)
            if hit is not None and hit != module:
                out.append((hit, node.lineno))
    return sorted(out, key=lambda d: d[1])


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _where(module: str) -> str:
    path = MODULES[module]
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def violations(graph: dict[str, list[tuple[str, int]]]) -> list[str]:
    found = []
    for mod, deps in sorted(graph.items()):
        for rule in RULES:
            if not _under(mod, rule.importer) or any(_under(mod, e) for e in rule.exempt):
                continue
            for dep, line in deps:
                if any(_under(dep, f) for f in rule.imported) and not _under(dep, rule.importer):
                    found.append(f"{_where(mod)}:{line}: {mod} imports {dep}: {rule.reason}")
        if is_core(mod):
            found += [f"{_where(mod)}:{line}: {mod} imports {dep}: {DRIVER_REASON}" for dep, line in deps if is_driver(dep)]
    return found


def io_of(path: Path) -> list[tuple[str, int]]:
    """(what, line) for every I/O a module does by the source: an import of an I/O module (anywhere, lazy
    or for type hints; ``from socket import`` of its pure conversions excepted) and every call that opens
    a file."""
    tree = ast.parse(path.read_text(), str(path))
    out: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(f"imports {a.name}", node.lineno) for a in node.names if a.name.split(".")[0] in IO_MODULES]
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] in IO_MODULES:
            if node.module == "socket" and all(a.name in PURE_SOCKET_NAMES for a in node.names):
                continue
            out.append((f"imports from {node.module} ({', '.join(a.name for a in node.names)})", node.lineno))
        elif isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id == "open":
                out.append(("opens a file (open())", node.lineno))
            elif isinstance(f, ast.Attribute) and f.attr in FILE_METHODS:
                out.append((f"opens a file ({ast.unparse(f)}())", node.lineno))
    return sorted(out, key=lambda d: d[1])


def io_violations(modules: dict[str, Path]) -> list[str]:
    """Every I/O of every core module (a module of a core package outside its driver folder)."""
    return [f"{_where(m)}:{line}: {m} {what}: a protocol core does no I/O (no sockets, threads, processes, "
            f"NFQUEUE or files); I/O lives in the driver folder {m.split('.')[0]}/{DRIVER_FOLDER}/"
            for m, path in sorted(modules.items()) if is_core(m) for what, line in io_of(path)]


def cycles(graph: dict[str, list[tuple[str, int]]]) -> list[list[str]]:
    """Every strongly connected component with more than one module (Tarjan), each as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w, _ in graph.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def import_graph() -> dict[str, list[tuple[str, int]]]:
    return {m: imports_of(m, p) for m, p in MODULES.items()}


def test_the_scan_sees_every_package_and_lazy_imports():
    """Guards the test itself: it finds the modules, and imports inside functions count."""
    graph = import_graph()
    assert {m.split(".")[0] for m in graph} == set(PACKAGES) | set(NEUTRAL)
    # the folder rule sees drivers and cores: the UDP driver does I/O, the forwarding step is a core
    assert is_driver("routing.drivers.udp") and io_of(MODULES["routing.drivers.udp"])
    assert is_core("routing.forwarding.step") and is_core("routing.medium.rate_control.minstrel")
    assert not is_core("etx.drivers.prober") and not is_core("experiments.cli")
    # experiments.runner imports plots inside run_experiment (the schema must not load pandas)
    assert "plots.run_summary" in {d for d, _ in graph["experiments.runner"]}


def test_no_forbidden_import():
    found = violations(import_graph())
    assert not found, "forbidden imports (docs/DESIGN.md, 'Layers'):\n" + "\n".join(found)


def test_no_core_does_io():
    found = io_violations(MODULES)
    assert not found, "I/O in a core folder (docs/DESIGN.md, 'Layers'):\n" + "\n".join(found)


def test_io_in_a_core_is_reported(tmp_path):
    """The I/O rule catches what it claims to: I/O imports (lazy too), file opens of every form; the pure
    socket conversions and the same code in a driver folder pass."""
    fake = tmp_path / "fake.py"
    fake.write_text("import socket\nfrom socket import inet_aton\nimport os, pathlib\n"
                    "def f(p):\n    import threading\n    from subprocess import run\n"
                    "    open(p)\n    os.open(p, 0)\n    pathlib.Path(p).read_text()\n    p.write_bytes(b'')\n")
    MODULES["routing.medium.fake"] = MODULES["routing.drivers.fake"] = fake
    try:
        found = io_violations({m: MODULES[m] for m in ("routing.medium.fake", "routing.drivers.fake")})
    finally:
        del MODULES["routing.medium.fake"], MODULES["routing.drivers.fake"]
    assert [f.split(": a protocol core")[0].split(": ", 1)[1] for f in found] == [
        "routing.medium.fake imports socket", "routing.medium.fake imports threading",
        "routing.medium.fake imports from subprocess (run)", "routing.medium.fake opens a file (open())",
        "routing.medium.fake opens a file (os.open())", "routing.medium.fake opens a file (pathlib.Path(p).read_text())",
        "routing.medium.fake opens a file (p.write_bytes())"]
    assert found[0].startswith(f"{fake}:1: ")


def test_no_import_cycle():
    found = cycles(import_graph())
    assert not found, "import cycles (each a set of modules that import one another):\n" + \
        "\n".join(" <-> ".join(c) for c in found)


def test_a_forbidden_import_is_reported_with_its_reason(tmp_path):
    """The rules catch what they claim to: a core importing the application layer lazily, in a
    function, or for type hints only."""
    fake = tmp_path / "fake.py"
    fake.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import plots.data\n"
                    "def f():\n    from experiments.runner import run_experiment\n")
    MODULES["aspan.fake"] = fake
    try:
        graph = {"aspan.fake": imports_of("aspan.fake", fake)}
        found = violations(graph)
    finally:
        del MODULES["aspan.fake"]
    assert len(found) == 2
    assert "fake.py:3: aspan.fake imports plots.data: a protocol core" in found[0]
    assert "fake.py:5: aspan.fake imports experiments.runner: a protocol core" in found[1]


def test_a_core_importing_its_own_packages_driver_is_reported(tmp_path):
    fake = tmp_path / "fake.py"
    fake.write_text("from routing.drivers.eventlog import EventLog\nfrom routing.forwarding.step import Held\n")
    MODULES["routing.links.fake"] = fake
    try:
        found = violations({"routing.links.fake": imports_of("routing.links.fake", fake)})
    finally:
        del MODULES["routing.links.fake"]
    assert found == [f"{fake}:1: routing.links.fake imports routing.drivers.eventlog: {DRIVER_REASON}"]


def test_a_cycle_is_found():
    graph = {"a": [("b", 1)], "b": [("c", 1)], "c": [("a", 1)], "d": [("a", 1)]}
    assert cycles(graph) == [["a", "b", "c"]]
