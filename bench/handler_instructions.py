"""Instructions per packet of the NFQUEUE handler, counted by valgrind: a load-independent handler_cost.

``bench handler_cost`` measures time, and on a shared 2-core machine its rounds spread by 30 % or
more.  This runs the same crafted packet streams through the same callbacks (bench/handler_cost.py)
under ``valgrind --tool=callgrind`` and reports the instructions each packet costs: the count of a
run with two passes over the stream minus that of a run with one pass (interpreter start, imports
and the stream's construction cancel out).  Instruction counts do not see cache misses or the other
jobs on the machine, so they complement the timed benchmark, not replace it.

``--tree DIR`` measures another checkout (e.g. a ``git worktree`` of the revision before a change)
with the same procedure, so before and after come from one run::

    git worktree add --detach /tmp/before 1355d84
    .venv/bin/python -m bench handler_instructions --tree /tmp/before

Needs valgrind (apt install valgrind); no root.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODES = [("A", "none"), ("B", "none"), ("B", "every"), ("C", "none"), ("C", "every")]

# One pass or two over node's stream, in the tree on PYTHONPATH.  Trees from before routing.drivers.eventlog
# (issue 10) log through the netns backend's AppendLog, with the batching the handler used then.
_PROBE = r"""
import sys, tempfile
from pathlib import Path
import bench.handler_cost as hc
try:
    from routing.drivers.eventlog import EventLog
    make_log = lambda path, node: EventLog(path, node, batch=True)
except ImportError:
    from experiments.backends.netns.logfile import AppendLog
    make_log = lambda path, node: AppendLog(path, node, autoflush=False)
node, policy, n, passes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
stream = hc._streams(n)[node]
with tempfile.TemporaryDirectory() as tmp:
    log = make_log(Path(tmp) / "x.log", node)
    drv = hc._driver(node, policy, log)
    for _ in range(passes):
        hc._time(drv._handle, log.flush, stream, 64)
    log.close()
print(len(stream))
"""


def instructions(tree: Path, probe: str, args: list[str], passes: int) -> tuple[int, int]:
    """(instructions of the whole process, packets in one pass) of ``probe`` (a script that makes
    ``passes`` passes over a stream of packets and prints the stream's length) run in ``tree``."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                        sys.executable, "-c", probe, *args, str(passes)],
                       cwd=tree, env=env, capture_output=True, text=True, timeout=3600)
    m = re.search(r"Collected : (\d+)", r.stderr)
    if r.returncode != 0 or m is None:
        raise SystemExit(f"bench: {' '.join(args)} in {tree} failed under callgrind (exit {r.returncode}):\n"
                         f"{r.stdout}\n{r.stderr[-2000:]}")
    return int(m.group(1)), int(r.stdout.split()[-1])


def per_packet_of(tree: Path, probe: str, args: list[str]) -> float:
    """Instructions per packet of one pass: two passes minus one (start-up and the stream cancel out).
    A run outside callgrind comes first, so that both counted runs find the tree's bytecode compiled
    (in a fresh checkout the one-pass run would otherwise count the compiling, and the difference
    come out low)."""
    warm = subprocess.run([sys.executable, "-c", probe, *args, "1"], cwd=tree,
                          env=dict(os.environ, PYTHONPATH=str(tree)), capture_output=True, text=True, timeout=3600)
    if warm.returncode != 0:
        raise SystemExit(f"bench: {' '.join(args)} in {tree} failed (exit {warm.returncode}):\n{warm.stderr[-2000:]}")
    one, packets = instructions(tree, probe, args, 1)
    two, _ = instructions(tree, probe, args, 2)
    return (two - one) / packets


def compare_table(prog: str, title: str, label_head: str, rows: list[tuple[str, str, list[str]]],
                  before: Path | None) -> None:
    """Print ``title``, then for each row (label, probe, probe arguments) the instructions per packet
    in the ``before`` checkout (when given) and in this tree, and their ratio."""
    if shutil.which("valgrind") is None:
        raise SystemExit(f"bench {prog}: valgrind is not installed (apt install valgrind)")
    trees = ([("before", before.resolve())] if before else []) + [("after", ROOT)]
    print(title)
    print(label_head + " " + " ".join(f"{name:>12}" for name, _ in trees) + (f" {'after / before':>15}" if before else ""))
    for label, probe, args in rows:
        counts = [per_packet_of(tree, probe, args) for _, tree in trees]
        row = label + " " + " ".join(f"{c:12,.0f}" for c in counts)
        if before:
            row += f" {counts[1] / counts[0]:15.3f}"
        print(row, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench handler_instructions")
    ap.add_argument("--packets", type=int, default=3000, help="data segments of the flow (a minute per mode)")
    ap.add_argument("--tree", type=Path, help="also measure this checkout (before), next to this tree (after)")
    args = ap.parse_args(argv)
    compare_table("handler_instructions",
                  f"handler callbacks under callgrind, {args.packets} data segments (+ACKs at B, C): "
                  f"instructions per packet, one pass (two passes minus one)",
                  f"{'node':<5} {'mode':<22}",
                  [(f"{node:<5} {'snoop (policy ' + policy + ')':<22}", _PROBE, [node, policy, str(args.packets)])
                   for node, policy in MODES], args.tree)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
