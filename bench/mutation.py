"""Mutation testing of the protocol cores with mutmut (issue 30, item 3; docs/MUTATION.md).

``python -m bench mutation [MODULE ...] [--report | --resume] [--survivors] [--equivalents]`` (or ``make mutation``)
runs mutmut on each core module named (default: all of bench/mutation_tables/modules.toml), one module at a
time, under ``nice -n 19`` with one worker, over the unit tests that cover that module only (modules.toml: no
root, no real-time tests).  It is slow and not run in CI; ``pip install -e '.[mutation]'`` installs mutmut.

Each module runs in a copy of the tree, ``.mutation/<module>/`` (gitignored, kept for triage:
``cd .mutation/<module> && mutmut show NAME``), whose pyproject.toml gets a ``[tool.mutmut]`` table
naming that module and its tests; the work tree itself is never written.  Per module it prints
mutants, killed (timeouts count as killed: the tests did not pass), equivalent (bench/mutation_tables/equivalent.toml, each
with its reason and the mutated line it expects, so a stale entry is reported), survived (including
mutants no selected test reaches) and the score killed / (mutants - equivalent).  It exits 1 when a
module scores below ``TARGET`` or an equivalent entry no longer matches its mutant.
"""
from __future__ import annotations

import argparse
import ast
import functools
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".mutation"
TARGET = 0.90


#: the packages copied into mutmut's tree (everything a selected test may import)
PACKAGES = ["aspan", "etx", "tcp_user", "routing", "experiments", "plots", "deploy", "bench"]
#: the top-level modules copied with them (pyproject.toml py-modules)
NEUTRAL = ["fieldspec.py", "tracefiles.py"]

#: the tables of the run, as data (loaded and checked by load_tables): modules.toml (which tests run against
#: each module's mutants, which are left out and why), equivalent.toml (the mutants no test can kill)
TABLES = Path(__file__).resolve().parent / "mutation_tables"
#: the packages whose modules may be mutated (the cores, and the neutral modules beside them)
CORE_PACKAGES = ("aspan", "etx", "tcp_user", "routing")


class MutationTableError(ValueError):
    """A wrong entry in bench/mutation_tables/: the message names the file and the entry."""


@dataclass(frozen=True)
class ModuleTests:
    """The tests of one module's run: whole files, single tests of other files, and tests left out."""

    tests: list[str]
    only: list[str] = field(default_factory=list)
    deselect: list[str] = field(default_factory=list)

    @property
    def selection(self) -> list[str]:
        """What mutmut's stats run is given: the whole files, then the single tests."""
        return [*self.tests, *self.only]


@functools.lru_cache(maxsize=None)
def _test_functions(path: Path) -> set[str]:
    """The test functions defined at the top of a test file (what a ``file::name`` may name)."""
    tree = ast.parse(path.read_text(), str(path))
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _check_test(root: Path, source: str, where: str, ref: object, need_function: bool) -> str:
    if not isinstance(ref, str) or not ref:
        raise MutationTableError(f"{source}: {where}: {ref!r} is not a test path")
    path, _, name = ref.partition("::")
    if not path.startswith("tests/") or not path.endswith(".py"):
        raise MutationTableError(f"{source}: {where}: {ref!r} is not a file under tests/")
    if not (root / path).is_file():
        raise MutationTableError(f"{source}: {where}: {path} does not exist")
    if need_function and not name:
        raise MutationTableError(f"{source}: {where}: {ref!r} names no test (file::test_name)")
    if name and name not in _test_functions(root / path):
        raise MutationTableError(f"{source}: {where}: {path} has no test {name}")
    return ref


def load_modules(path: Path, root: Path) -> dict[str, ModuleTests]:
    """modules.toml: every module a core module of this tree, every test path and test name there."""
    source = path.relative_to(root) if path.is_relative_to(root) else path
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise MutationTableError(f"{source}: {e}") from e
    out: dict[str, ModuleTests] = {}
    for module, entry in data.items():
        where = f"[{module!r}]"
        if not (module.endswith(".py") and (module.split("/")[0] in CORE_PACKAGES or f"{module}" in NEUTRAL)):
            raise MutationTableError(f"{source}: {where}: not a module of a core package "
                                     f"({', '.join(CORE_PACKAGES)}) nor one of {', '.join(NEUTRAL)}")
        if not (root / module).is_file():
            raise MutationTableError(f"{source}: {where}: {module} does not exist")
        if not isinstance(entry, dict):
            raise MutationTableError(f"{source}: {where}: a table of tests, only and deselect is expected")
        unknown = set(entry) - {"tests", "only", "deselect"}
        if unknown:
            raise MutationTableError(f"{source}: {where}: unknown key {', '.join(sorted(unknown))} "
                                     "(tests, only, deselect)")
        lists = {}
        for key in ("tests", "only", "deselect"):
            refs = entry.get(key, [])
            if not isinstance(refs, list):
                raise MutationTableError(f"{source}: {where}.{key}: a list of test paths is expected")
            lists[key] = [_check_test(root, str(source), f"{where}.{key}[{i}]", ref, key != "tests")
                          for i, ref in enumerate(refs)]
        if not lists["tests"] and not lists["only"]:
            raise MutationTableError(f"{source}: {where}: no tests")
        whole = set(lists["tests"])
        for i, ref in enumerate(lists["deselect"]):
            if ref.partition("::")[0] not in whole:
                raise MutationTableError(f"{source}: {where}.deselect[{i}]: {ref} is not in one of the module's "
                                         "test files (tests)")
        out[module] = ModuleTests(**lists)
    return out


def load_equivalents(path: Path, root: Path, modules: dict[str, ModuleTests]) -> dict[str, tuple[str, str]]:
    """equivalent.toml: mutant name -> (the mutated line as ``mutmut show`` prints it after "+", why no test can
    kill it); each mutant of a module of modules.toml, each reason named under [reasons] or given as why."""
    source = path.relative_to(root) if path.is_relative_to(root) else path
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise MutationTableError(f"{source}: {e}") from e
    reasons = data.get("reasons", {})
    prefixes = {m.removesuffix(".py").replace("/", ".") + ".": m for m in modules}
    out: dict[str, tuple[str, str]] = {}
    for i, m in enumerate(data.get("mutant", [])):
        where = f"mutant[{i}]" + (f" ({m['name']})" if isinstance(m.get("name"), str) else "")
        name, line = m.get("name"), m.get("line")
        if not isinstance(name, str) or not isinstance(line, str) or not line:
            raise MutationTableError(f"{source}: {where}: a name and the mutated line are expected")
        if not any(name.startswith(p) for p in prefixes):
            raise MutationTableError(f"{source}: {where}: not a mutant of a module of modules.toml")
        if name in out:
            raise MutationTableError(f"{source}: {where}: listed twice")
        if ("reason" in m) == ("why" in m):
            raise MutationTableError(f"{source}: {where}: exactly one of reason (a name under [reasons]) or why")
        if "reason" in m:
            if m["reason"] not in reasons:
                raise MutationTableError(f"{source}: {where}: reason {m['reason']!r} is not under [reasons]")
            why = reasons[m["reason"]]
        else:
            why = m["why"]
        out[name] = (line, why)
    return out


def load_tables(tables: Path = TABLES, root: Path = ROOT) -> tuple[dict[str, ModuleTests], dict[str, tuple[str, str]]]:
    modules = load_modules(tables / "modules.toml", root)
    return modules, load_equivalents(tables / "equivalent.toml", root, modules)


@functools.lru_cache(maxsize=1)
def tables() -> tuple[dict[str, ModuleTests], dict[str, tuple[str, str]]]:
    """The shipped tables, loaded and checked once."""
    return load_tables()


KILLED = {"killed", "timeout", "caught by type check", "segfault"}


@dataclass
class ModuleScore:
    module: str
    statuses: dict[str, str] = field(default_factory=dict)
    stale: list[str] = field(default_factory=list)

    @property
    def mutants(self) -> int:
        return len(self.statuses)

    @property
    def killed(self) -> int:
        return sum(s in KILLED for s in self.statuses.values())

    @property
    def equivalent(self) -> int:
        return sum(s == "equivalent" for s in self.statuses.values())

    @property
    def survivors(self) -> list[str]:
        return sorted(n for n, s in self.statuses.items() if s not in KILLED and s != "equivalent")

    @property
    def score(self) -> float:
        live = self.mutants - self.equivalent
        return self.killed / live if live else 1.0

    def row(self) -> str:
        return (f"| `{self.module}` | {self.mutants} | {self.killed} | {self.equivalent} | {len(self.survivors)} "
                f"| {100 * self.score:.1f} % |")


def slug(module: str) -> str:
    return module.replace("/", "_").removesuffix(".py")


def mutmut_table(module: str) -> str:
    """The ``[tool.mutmut]`` table of one module's run."""
    def toml_list(xs: list[str]) -> str:
        return "[" + ", ".join(json.dumps(x) for x in xs) + "]"
    selected = tables()[0][module]
    tests = selected.selection
    deselect = [a for t in selected.deselect for a in ("--deselect", t)]
    return ("\n[tool.mutmut]\n"
            f"source_paths = {toml_list(PACKAGES)}\n"
            f"also_copy = {toml_list(NEUTRAL)}\n"
            f"only_mutate = {toml_list([module])}\n"
            f"pytest_add_cli_args = {toml_list(['-p', 'no:cacheprovider', '-m', 'not root and not slow', '-q', *deselect])}\n"
            f"pytest_add_cli_args_test_selection = {toml_list(tests)}\n"
            # a mutant's CPU limit: 2 x 5 x (its tests' clean time + 2 s); an endless loop is a timeout
            "timeout_multiplier = 5.0\n"
            "timeout_constant = 2.0\n"
            "use_git_change_detection = false\n")


def prepare(module: str) -> Path:
    """A fresh copy of the tree for ``module``'s run, with its mutmut table."""
    work = WORK / slug(module)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for pkg in PACKAGES + ["tests"]:
        shutil.copytree(ROOT / pkg, work / pkg, ignore=ignore)
    for mod in NEUTRAL:
        shutil.copy2(ROOT / mod, work / mod)
    (work / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text() + mutmut_table(module))
    return work


def mutmut() -> str:
    exe = Path(sys.executable).with_name("mutmut")
    if not exe.exists():
        raise SystemExit("mutmut is not installed in this venv: pip install -e '.[mutation]'")
    return str(exe)


def resume(module: str) -> list[str]:
    """Bring the tests of ``module``'s last run up to date, for a run of its survivors only.

    Only the test files are copied again: the mutated module and the ``[tool.mutmut]`` table stay as
    they were (mutmut resets every result when its test selection changes, so a module whose list of
    test files changed needs a fresh run).  A test added cannot revive a killed mutant, so the killed
    keep their verdict; mutmut traces the new tests before it runs the survivors again."""
    work = WORK / slug(module)
    toml = work / "pyproject.toml"
    if not toml.exists():
        raise SystemExit(f"{work}: no earlier run of {module} to resume")
    if mutmut_table(module) not in toml.read_text():
        raise SystemExit(f"{module}: its test files or settings changed since its last run: run it afresh")
    src = (ROOT / module).read_text()
    if (work / module).read_text() != src:
        raise SystemExit(f"{module} changed since its last run: run it afresh")
    shutil.rmtree(work / "tests")
    shutil.copytree(ROOT / "tests", work / "tests", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return score(module).survivors


def run_module(module: str, only: list[str] | None = None) -> None:
    """mutmut on ``module`` in a fresh copy, or (``only``) on those mutants of its last run."""
    if only is not None and not only:
        print(f"== {module}: no survivor to run again")
        return
    work = WORK / slug(module) if only is not None else prepare(module)
    cmd = ["nice", "-n", "19", mutmut(), "run", "--max-children", "1", *(only or [])]
    print(f"== {module}: {' '.join(cmd)} (in {work.relative_to(ROOT)})", flush=True)
    t0 = time.monotonic()
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    log = work / "mutmut-run.log"
    with log.open("w") as out:
        r = subprocess.run(cmd, cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT)
    print(f"   mutmut exit {r.returncode} after {time.monotonic() - t0:.0f} s (log: {log})")
    if r.returncode != 0:
        print(log.read_text(errors="replace")[-3000:])
        raise SystemExit(f"mutmut failed on {module}")


def mutant_line(work: Path, name: str) -> str:
    """The '+' line of one mutant's diff."""
    r = subprocess.run([mutmut(), "show", name], cwd=work, capture_output=True, text=True)
    plus = [ln[1:].strip() for ln in r.stdout.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    return " / ".join(plus)


def score(module: str) -> ModuleScore:
    """The statuses of ``module``'s last run, with the equivalent mutants marked."""
    from mutmut.stats import status_by_exit_code
    work = WORK / slug(module)
    meta = work / "mutants" / (module + ".meta")
    if not meta.exists():
        raise SystemExit(f"{meta}: no mutmut results for {module}; run without --report first")
    codes = json.loads(meta.read_text())["exit_code_by_key"]
    out = ModuleScore(module)
    for name, code in codes.items():
        status = status_by_exit_code[code]
        equivalent = tables()[1]
        if name in equivalent:
            expected = equivalent[name][0]
            if status in KILLED or expected not in mutant_line(work, name):
                out.stale.append(name)
            else:
                status = "equivalent"
        out.statuses[name] = status
    return out


def print_equivalents(modules: list[str]) -> None:
    """The equivalent mutants (equivalent.toml) of ``modules`` as a markdown table (docs/MUTATION.md)."""
    print("| mutant | mutated line | why no test can kill it |")
    print("|---|---|---|")
    for module in modules:
        prefix = module.removesuffix(".py").replace("/", ".") + "."
        for name, (line, why) in tables()[1].items():
            if name.startswith(prefix):
                cell = line.replace("|", "\\|")   # a `|` would end the markdown cell
                print(f"| `{name}` | `{cell}` | {why} |")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench mutation", description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="*", help="core modules (default: all of bench/mutation_tables/modules.toml)")
    ap.add_argument("--report", action="store_true", help="score the last runs again without running mutmut")
    ap.add_argument("--resume", action="store_true",
                    help="copy the tests again into each module's last run and run its survivors only "
                         "(the module and its list of test files unchanged since)")
    ap.add_argument("--survivors", action="store_true", help="print each surviving mutant's diff")
    ap.add_argument("--equivalents", action="store_true",
                    help="print the equivalent mutants of the modules, with their reasons, as markdown")
    args = ap.parse_args(argv)
    try:
        module_tests = tables()[0]
    except MutationTableError as e:
        raise SystemExit(f"bench/mutation_tables: {e}") from e
    modules = args.modules or list(module_tests)
    unknown = [m for m in modules if m not in module_tests]
    if unknown:
        raise SystemExit(f"not a core module of the mutation run: {', '.join(unknown)}; expected {', '.join(module_tests)}")
    if args.equivalents:
        print_equivalents(modules)
        return 0
    results = []
    for module in modules:
        if args.resume:
            run_module(module, resume(module))
        elif not args.report:
            run_module(module)
        results.append(score(module))
        if args.survivors:
            work = WORK / slug(module)
            for name in results[-1].survivors:
                print(subprocess.run([mutmut(), "show", name], cwd=work, capture_output=True, text=True).stdout)
    print("| module | mutants | killed | equivalent | survived | score |")
    print("|---|---|---|---|---|---|")
    failed = False
    for res in results:
        print(res.row())
        for name in res.stale:
            print(f"   stale equivalent entry (killed now, or its mutant changed): {name}")
        failed |= res.score < TARGET or bool(res.stale)
    return 1 if failed else 0
