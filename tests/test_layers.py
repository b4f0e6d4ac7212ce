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
CORES = ("aspan", "etx", "tcp_user", "routing")
# The drivers of routing: sockets, threads, NFQUEUE, log files.  Everything else in routing is a core.
ROUTING_DRIVERS = ("routing.udp", "routing.udp_probe", "routing.nfq", "routing.link_shaper", "routing.eventlog")
APPLICATION = ("experiments", "deploy", "plots", "bench")


@dataclass(frozen=True)
class Rule:
    """Modules under ``importer`` (a package or module prefix) may not import under ``imported``."""

    importer: str
    imported: tuple[str, ...]
    reason: str
    exempt: tuple[str, ...] = ()


RULES = [
    *(Rule(core, APPLICATION, "a protocol core (no I/O, no command line) knows nothing of the application "
           "layer: experiments, deploy, plots and bench use the cores, never the other way round",
           exempt=ROUTING_DRIVERS if core == "routing" else ()) for core in CORES),
    *(Rule(core, ROUTING_DRIVERS, "a protocol core imports no driver (sockets, threads, NFQUEUE): "
           "drivers wrap the cores, so the same core runs in the sim, on UDP and on NFQUEUE",
           exempt=ROUTING_DRIVERS if core == "routing" else ()) for core in CORES),
    Rule("deploy", ("experiments", "plots", "bench"), "deploy is the library of Fabric tasks for the Pi mesh; it "
         "knows no runner and no schema (the pi backend and the aspan deploy command live in experiments)"),
    Rule("plots", ("experiments", "deploy", "bench", *CORES), "plots reads only logs (run directories): it works "
         "the same for a run of any backend, written by any version, so it imports nothing that runs a network"),
    Rule("routing.fieldspec", ("aspan", "etx", "routing", "tcp_user", "experiments", "deploy", "plots", "bench"),
         "routing.fieldspec is the neutral home of the field declarations shared by routing.loss, "
         "experiments.schema and deploy.inventory; it must stay importable by all of them without pulling any in"),
    Rule("experiments", ("bench",), "bench measures the testbed; nothing of the testbed depends on it"),
]


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    mods: dict[str, Path] = {}
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
    return found


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
    assert {m.split(".")[0] for m in graph} == set(PACKAGES)
    # experiments.runner imports plots inside run_experiment (the schema must not load pandas)
    assert "plots.run_summary" in {d for d, _ in graph["experiments.runner"]}


def test_no_forbidden_import():
    found = violations(import_graph())
    assert not found, "forbidden imports (docs/DESIGN.md, 'Layers'):\n" + "\n".join(found)


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


def test_a_cycle_is_found():
    graph = {"a": [("b", 1)], "b": [("c", 1)], "c": [("a", 1)], "d": [("a", 1)]}
    assert cycles(graph) == [["a", "b", "c"]]
