"""What both data planes of the pi backend share: per-host failures, the preflight, progress.

Split from :mod:`experiments.backends.pi` so that the kernel data plane
(:mod:`experiments.backends.pi_kernel`) uses them without an import cycle.
"""
from __future__ import annotations

import shlex
from typing import Any, Callable

from deploy import clock, nodes
from deploy.hosts import GroupException, HostError, Remote, by_name, failure_lines, on_hosts
from deploy.inventory import Inventory, InventoryError

POLL_TRIES = 3          # consecutive failed polls of a host before it counts as lost


class RunFailed(RuntimeError):
    """The repetition cannot go on; ``lines`` says why, one line per host."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        super().__init__("; ".join(lines))


def _group(remotes: list[Remote], task: Callable[[Remote], Any]) -> dict[str, Any]:
    """``on_hosts`` keyed by host name; any host failing raises RunFailed with a line per host."""
    try:
        return by_name(on_hosts(remotes, task), remotes)
    except GroupException as e:
        raise RunFailed(failure_lines(e, remotes)) from None


def check_hosts(inv: Inventory, names: list[str]) -> None:
    missing = [n for n in names if n not in inv.by_node()]
    if missing:
        raise InventoryError(inv.source, "hosts", f"no host runs node(s) {', '.join(missing)} of the experiment; "
                             f"the inventory has {', '.join(h.node for h in inv.hosts)}")


def _preflight(remotes: list[Remote], rdirs: dict[str, str], meta: dict[str, Any]) -> dict[str, float]:
    """Every host: installed, no node still running, its run directory made, clock offset measured."""

    def check(r: Remote) -> clock.ClockSample:
        h = r.host
        running = r.run(f"test -x {shlex.quote(h.aspan)} || {{ echo 'not installed at {h.install_dir}: "
                        f"run aspan deploy setup' >&2; exit 1; }}; mkdir -p {shlex.quote(rdirs[h.node])} && "
                        + nodes.running_nodes_command(h.work_dir)).stdout.split()
        if running:
            raise HostError(f"an aspan node still runs there (pid file {running[0]}): run aspan deploy stop")
        return clock.measure(r)

    samples = _group(remotes, check)
    by_node = {r.host.node: samples[r.name] for r in remotes}
    meta["clock_offsets"] = {n: round(s.offset, 6) for n, s in by_node.items()}
    meta["clock_rtt_s"] = {n: round(s.rtt, 6) for n, s in by_node.items()}
    return {n: s.offset for n, s in by_node.items()}
