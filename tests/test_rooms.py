"""Shared things in shared rooms (issue 38, item 4): no private name crosses a module boundary in the
project's own code, and the schema takes the backend registry from below it.

A name that starts with one underscore belongs to its module: another module that needs it gets a
public name (in the module, or in a shared one such as plots/style.py or experiments/backends/
kernel_plan.py).  Read from the source with ``ast``: ``from m import _x`` and ``m._x`` (``m`` bound by
an import to a module or a name of the project) are reported; dunders (``__version__``) are not.
Tests may reach into a module: they are not scanned.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("aspan", "etx", "routing", "tcp_user", "experiments", "deploy", "plots", "bench")
NEUTRAL = ("fieldspec", "tracefiles")


def project_modules(root: Path, packages: tuple[str, ...] = PACKAGES,
                    neutral: tuple[str, ...] = NEUTRAL) -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``packages`` and the neutral top-level modules."""
    out: dict[str, Path] = {}
    for pkg in packages:
        for f in sorted((root / pkg).rglob("*.py")):
            parts = list(f.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = f
    for name in neutral:
        if (root / f"{name}.py").exists():
            out[name] = root / f"{name}.py"
    return out


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _base_of(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module of a ``from ... import`` (relative imports resolved against ``module``)."""
    if not node.level:
        return node.module or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    parts = parts[:len(parts) - node.level + 1]
    return ".".join(parts + ([node.module] if node.module else []))


def private_crossings(modules: dict[str, Path], root: Path) -> list[str]:
    """``file:line: what`` (the file relative to ``root``) for every private name one module takes from another."""
    found: list[str] = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        where = path.relative_to(root).as_posix()
        bound: dict[str, str] = {}        # local name -> the project module (or module.name) it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = _base_of(node, module, path.name == "__init__.py")
                for a in node.names:
                    if base in modules:
                        bound[a.asname or a.name] = f"{base}.{a.name}"
                        if is_private(a.name) and base != module:
                            found.append(f"{where}:{node.lineno}: from {base} import {a.name}")
            elif isinstance(node, ast.Import):
                for a in node.names:
                    local = a.asname or a.name.split(".")[0]
                    bound[local] = a.name if a.asname else a.name.split(".")[0]
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and is_private(node.attr)):
                continue
            chain: list[str] = []
            value = node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if not (isinstance(value, ast.Name) and value.id in bound):
                continue
            target = ".".join([bound[value.id], *reversed(chain)])
            owner = target if target in modules else target.rpartition(".")[0]
            if owner in modules and owner != module:
                found.append(f"{where}:{node.lineno}: {target}.{node.attr}")
    return found


def test_the_scan_sees_the_project():
    modules = project_modules(ROOT)
    assert {"plots.figures", "plots.style", "experiments.backends.kernel_plan", "deploy.nodes",
            "experiments.backends.netns.node", "fieldspec"} <= set(modules)
    assert not any(m.startswith("tests") for m in modules)


def test_no_private_name_crosses_a_module():
    found = private_crossings(project_modules(ROOT), ROOT)
    assert not found, ("private names used outside their module (give them a public name, in a shared module "
                       "if two need it):\n" + "\n".join(found))


def test_a_private_name_taken_from_another_module_is_reported(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("__version__ = '1'\n_secret = 1\n\n\ndef _helper():\n    return _secret\n\n\n"
                              "class Thing:\n    _slot = 2\n")
    (pkg / "b.py").write_text("from pkg.a import _helper, __version__\n")
    (pkg / "c.py").write_text("import pkg.a\nfrom pkg import a as alias\nfrom . import a\n\n\n"
                              "def f(x):\n    return pkg.a._secret + alias._helper() + a._secret + x._mine\n")
    (pkg / "d.py").write_text("from pkg.a import Thing\n\n\ndef g():\n    return Thing._slot + Thing.__name__.count('')\n")
    (pkg / "e.py").write_text("import os\n\n\ndef h():\n    os._exit\n    return __name__\n")
    found = private_crossings(project_modules(tmp_path, ("pkg",), ()), tmp_path)
    assert sorted(found) == sorted([
        "pkg/b.py:1: from pkg.a import _helper",
        "pkg/c.py:7: pkg.a._secret", "pkg/c.py:7: pkg.a._helper", "pkg/c.py:7: pkg.a._secret",
        "pkg/d.py:5: pkg.a.Thing._slot",
    ])


def test_a_module_may_use_its_own_private_names(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from pkg import _impl\n_x = _impl.value\n")   # a package's own room
    (pkg / "_impl.py").write_text("value = 1\n")
    (pkg / "a.py").write_text("import pkg.a\n_z = 1\n\n\ndef f():\n    return pkg.a._z\n")
    found = private_crossings(project_modules(tmp_path, ("pkg",), ()), tmp_path)
    assert found == []


def _project_imports(path: Path) -> set[str]:
    """Every module ``path`` imports (at the top or lazily), absolute names."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_the_schema_imports_no_backend_and_the_registry_imports_nothing_of_the_project():
    """experiments.schema takes the backend names from experiments.backend_registry, which imports none
    of the project, so validating a file never imports a backend (issue 38, item 4c)."""
    modules = project_modules(ROOT)
    schema = _project_imports(modules["experiments.schema"])
    assert "experiments.backend_registry" in schema
    assert not {m for m in schema if m == "experiments.backends" or m.startswith("experiments.backends.")}
    registry = _project_imports(modules["experiments.backend_registry"])
    assert not {m for m in registry if m.split(".")[0] in (*PACKAGES, *NEUTRAL)}
