"""Hand mutants of the graph and route rules (docs/MUTATION.md): each one-line break must fail a test.

``python -m bench hand_mutants [--tree DIR]`` applies each break alone to a copy of the tree, runs the
unit tests of the rules (tests/experiments/test_topology.py, tests/routing/topology/test_routes.py,
tests/experiments/test_netns_plan.py; the local backend's real-time test lives in tests/loopback/), and prints KILLED or SURVIVED with pytest's last line.  It exits 1
when a mutant survives.  The work tree is never written: each mutant runs in a temporary copy.  Until a
mutation tool covers the cores (issue 30, item 3), this is how the rules that issue 22 added stay pinned.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ["tests/experiments/test_topology.py", "tests/routing/topology/test_routes.py", "tests/experiments/test_netns_plan.py"]

#: (file, the line as it is, the break, what the break does)
MUTANTS: list[tuple[str, str, str, str]] = [
    ("routing/topology/graph.py", "            for v in nbrs[n]:\n", "            for v in reversed(nbrs[n]):\n",
     "tie-break takes the last neighbour"),
    ("routing/topology/graph.py", "    cost = link_cost or (lambda u, v: 1.0)\n", "    cost = lambda u, v: 1.0\n",
     "link_cost ignored"),
    ("routing/topology/graph.py", "            if math.isfinite(c):\n", "            if True:\n", "infinite ETX link kept"),
    ("routing/topology/graph.py", "        return [m for m in self.nodes if m in nb]\n", "        return sorted(nb)\n",
     "neighbours not in node order"),
    ("experiments/build.py", "            d = link.forward() * link.reverse()\n", "            d = link.forward()\n",
     "ETX from the forward ratio only"),
    ("routing/topology/routes.py", "        hops[n].update(table)\n", "        pass\n", "route overrides ignored"),
    ("routing/topology/routes.py", "                if len(path) > len(names):\n",
     "                if len(path) > 10 * len(names):\n", "loop bound loosened"),
    ("experiments/topology_spec.py", "    if len(comps) > 1:\n", "    if len(comps) > 99:\n",
     "disconnected graph accepted"),
    ("experiments/topology_spec.py", "        if key in seen:\n", "        if False:\n", "duplicate link accepted"),
    ("experiments/medium_spec.py", "            if x not in topo.hears[y]:\n", "            if False:\n",
     "link out of radio range accepted"),
    ("experiments/schema.py", "    out.update(directed)\n", "    pass\n", "directed link loss dropped"),
    ("experiments/build.py", "        if to == name:\n", "        if frm == name:\n", "link loss at the sender's end"),
    ("routing/forwarding/step.py", "        lost = self.link_lost.get(frm) if frm is not None else None\n",
     "        lost = None\n", "link loss never consulted"),
    ("experiments/backends/sim.py", "        node.core.engine.routes.replace(tables[n].as_dict())\n",
     "        pass\n", "the sim's ETX routes not installed"),
]


def run_mutant(tree: Path, file: str, old: str, new: str) -> tuple[bool, str]:
    """(killed, pytest's last line) of one break, run in a copy of ``tree``."""
    with tempfile.TemporaryDirectory(prefix="aspan-mutant-") as tmp:
        copy = Path(tmp) / "tree"
        shutil.copytree(tree, copy, ignore=shutil.ignore_patterns(".venv", ".git", "runs", "__pycache__"))
        path = copy / file
        text = path.read_text()
        if text.count(old) != 1:
            raise SystemExit(f"{file}: the line to break is not there exactly once: {old.strip()!r}")
        path.write_text(text.replace(old, new))
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *TESTS,
                            "-k", "not local_backend"], cwd=copy, capture_output=True, text=True, timeout=900)
        lines = r.stdout.strip().splitlines()
        return r.returncode != 0, lines[-1] if lines else r.stderr.strip()[-200:]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench hand_mutants", description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, default=ROOT, help="the source tree to mutate (default: this one)")
    args = ap.parse_args(argv)
    survived = 0
    for file, old, new, what in MUTANTS:
        killed, last = run_mutant(args.tree, file, old, new)
        survived += not killed
        print(f"{what:36s} {'KILLED' if killed else 'SURVIVED':8s} {last}", flush=True)
    print(f"{len(MUTANTS) - survived} of {len(MUTANTS)} killed")
    return 1 if survived else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
