"""babeld in each namespace instead of the nodes' own link-state routing (issue 23, item 4).

With ``routing.daemon: babeld`` the netns backend starts Debian's ``babeld`` (RFC 8966) in every node's
namespace, on all its veths, with the ``wireless`` interface type: link quality estimated from the
Hellos heard and the IHUs returned (RFC 8966 appendix A.2.2, an ETX-like cost), the routes it selects
installed into the namespace's kernel table, which the kernel TCP's packets follow.  Everything else is
what every netns run has: the NFQUEUE snoop handlers, the nodes' ETX probes (A-SPAN's ``pkt_effort`` is
computed from them, not from babeld), the loss models.

What makes the comparison with the builtin routing fair, and what it cannot make equal:

* **Failures reach babeld's packets too.**  The loss models act on IPv4 in the handlers; Babel speaks
  IPv6 link-local multicast (UDP 6696).  A node's Bernoulli loss is applied to its Babel packets by an
  ``ip6tables`` statistic match (:func:`loss_rules`), and its ``down`` intervals by a DROP rule the node
  daemon inserts and removes on time (:class:`BabelWatch`).  Other models (ramp, Gilbert-Elliott, bit
  errors) would miss the Hellos, so the schema refuses them with babeld.
* **Neighbours stay direct.**  Each node keeps its host route to every neighbour over that neighbour's
  veth (the ETX probes go there), at kernel metric 0; babeld installs its routes at metric
  KERNEL_PRIORITY, so they matter for every other node, and a neighbour is always sent to directly.
* **Starting routes.**  babeld runs and its routes are awaited (:func:`wait_converged`) before the
  node daemons and the flows start: the flows start on babeld's routes, as they start on the
  builtin routing's.
* babeld draws its own jitter from the system's randomness: its timing does not repeat by seed.

The nodes log a ``route`` event for every next hop babeld changes in their kernel table
(:class:`BabelWatch`, reading ``/proc/net/route``), so ``reroute_s`` and ``recovery_s`` of summary.csv
mean the same as with the builtin routing.
"""
from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import threading
import time
from experiments.config import ExperimentConfig
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from experiments.backends.netns.sh import NetnsError, run
from routing.topology.linkstate import RouteChange
from routing.links.loss import LinkDown

BABELD = "babeld"
IP6TABLES = "ip6tables-legacy"     # the same iptables backend as the IPv4 rules (sh.IPTABLES)
BABEL_PORT = 6696                  # RFC 8966 section 5.1
CONVERGE_TIMEOUT_S = 90.0
SMOOTHING_HALF_LIFE_S = 4.0        # babeld's -M default: route selection reads metrics smoothed with this half-life


WATCH_INTERVAL_S = 0.05
RTF_UP, RTF_REJECT = 0x0001, 0x0200   # /proc/net/route's flags (linux/route.h)
KERNEL_PRIORITY = 100              # babeld's routes' kernel metric (its -k); the neighbours' host routes have 0
DOWN_RULE = ["INPUT", "-p", "udp", "--dport", str(BABEL_PORT), "-j", "DROP"]


def quiet_s(hello_s: float) -> float:
    """How long no route may change before babeld counts as settled: four Hellos (a new neighbour's cost
    comes within about 15 % of its final value after four: the reach bits of RFC 8966 A.2.2 as babeld
    weighs them), and three half-lives of the smoothing its route selection reads (a first, worse route
    found while the link costs were still high is kept until the smoothed metrics cross)."""
    return max(4 * hello_s, 3 * SMOOTHING_HALF_LIFE_S)


def config_text(node_index: int, devs: Sequence[str], own: str, hello_s: float, files: Mapping[str, str]) -> str:
    """babeld's configuration for one node: its veths as wireless interfaces with the experiment's Hello
    interval, its own address redistributed and nothing else, its routes installed below the neighbours'
    host routes (KERNEL_PRIORITY), a fixed router-id (a MAC-48 from the node's index), and its pid and state
    files in the repetition directory."""
    lines = [f"# babeld for a netns node (experiments/backends/netns/babel.py)",
             f"router-id 02:a5:00:00:{node_index >> 8 & 0xff:02x}:{node_index & 0xff:02x}",
             f"pid-file {files['pid']}", f"state-file {files['state']}",
             *(f"interface {dev} type wireless hello-interval {hello_s:g}" for dev in devs),
             f"redistribute local ip {own}/32 allow", "redistribute local deny",
             # its routes a priority below the neighbours' own host routes (metric 0), which keep winning
             f"kernel-priority {KERNEL_PRIORITY}"]
    return "\n".join(lines) + "\n"


def loss_rules(rate: float, dev_prefix: str) -> str:
    """ip6tables-restore input: a node's Bernoulli loss applied to the Babel packets it hears."""
    rule = (f"-A INPUT -i {dev_prefix}+ -p udp --dport {BABEL_PORT} -m statistic --mode random "
            f"--probability {rate:.6f} -j DROP") if rate > 0 else None
    return "\n".join(["*filter", *([rule] if rule else []), "COMMIT"]) + "\n"


def parse_proc_route(text: str) -> dict[str, str]:
    """Host routes (/32) of a ``/proc/net/route`` listing: destination -> next hop (itself when direct); of two
    routes to one destination the one the kernel uses, the lower metric; unreachable routes are no route."""
    best: dict[str, tuple[int, str]] = {}
    for line in text.splitlines()[1:]:
        f = line.split()
        if len(f) < 8 or f[7] != "FFFFFFFF":
            continue
        flags = int(f[3], 16)
        if not flags & RTF_UP or flags & RTF_REJECT:      # babeld's unreachable routes for what it retracted
            continue
        dst = socket.inet_ntoa(struct.pack("<I", int(f[1], 16)))
        gw = int(f[2], 16)
        metric = int(f[6])
        if dst not in best or metric < best[dst][0]:
            best[dst] = (metric, socket.inet_ntoa(struct.pack("<I", gw)) if gw else dst)
    return {d: v for d, (_m, v) in best.items()}


def route_diff(old: Mapping[str, str], new: Mapping[str, str], own: str) -> list[RouteChange]:
    """The next hops that changed between two tables (destination order), as RouteChange without a metric
    (babeld's metric is not in the kernel's table)."""
    return [RouteChange(dst, old.get(dst), new.get(dst), None)
            for dst in sorted(set(old) | set(new)) if dst != own and old.get(dst) != new.get(dst)]


def mesh_routes(table: Mapping[str, str], addresses: Sequence[str]) -> dict[str, str]:
    """Only the routes toward mesh nodes (the kernel table also holds the namespace's other host routes)."""
    return {d: v for d, v in table.items() if d in addresses}


class BabelWatch:
    """In a node daemon (inside its namespace): every WATCH_INTERVAL_S, the kernel's routes to the mesh
    nodes as babeld left them, a ``route`` event per next hop that changed and the node's RouteTable
    (what its snoop step reads) updated; and the node's ``down`` intervals applied to Babel's packets."""

    def __init__(self, own: str, addresses: Sequence[str], start: Mapping[str, str],
                 on_routes: Callable[[list[RouteChange], dict[str, str], float], None],
                 down: Sequence[Sequence[float]], emit: Callable[..., None],
                 read: Callable[[], str] = lambda: Path("/proc/net/route").read_text(),
                 ip6tables: Callable[[list[str]], None] | None = None) -> None:
        self.own = own
        self.addresses = [a for a in addresses if a != own]
        self.routes = dict(mesh_routes(start, self.addresses))
        self.on_routes = on_routes
        self.down = LinkDown(down)          # the node's down intervals, the loss models' own rule
        self.emit = emit
        self.read = read
        self.ip6tables = ip6tables or _ip6tables
        self.blocked = False
        self.stats = {"route_changes": 0, "polls": 0, "down_switches": 0}
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="babel-watch", daemon=True)

    def poll(self, now: float) -> None:
        """One look: the down gate, then the routes."""
        want = self.down.drop(now)
        if want != self.blocked:
            self.ip6tables(["-I" if want else "-D", *DOWN_RULE])
            self.blocked = want
            self.stats["down_switches"] += 1
            self.emit(now, "babel_down", on=want)
        self.stats["polls"] += 1
        new = mesh_routes(parse_proc_route(self.read()), self.addresses)
        changes = route_diff(self.routes, new, self.own)
        if changes:
            self.routes = new
            self.stats["route_changes"] += len(changes)
            self.on_routes(changes, new, now)

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                self.poll(time.time())
                self._stop.wait(WATCH_INTERVAL_S)
        except BaseException as e:   # noqa: BLE001 -- handed to the daemon's tick, which fails the node with it
            self.error = e

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2.0)


def _ip6tables(args: list[str]) -> None:
    r = subprocess.run([IP6TABLES, *args], capture_output=True, text=True, timeout=10)
    if r.returncode != 0:
        raise NetnsError(f"{IP6TABLES} {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")


def missing() -> list[str]:
    """What a babeld run needs here besides the netns backend's own prerequisites."""
    return [f"the {t} command" for t in (BABELD, IP6TABLES, f"{IP6TABLES}-restore") if shutil.which(t) is None]


def kernel_routes(ns: str) -> dict[str, str]:
    """Namespace ``ns``'s IPv4 host routes, destination -> next hop (:func:`parse_proc_route`)."""
    return parse_proc_route(run(["cat", "/proc/net/route"], ns=ns).stdout)


def wait_converged(namespaces: Mapping[str, str], addrs: Mapping[str, str], alive: Callable[[], str | None],
                   quiet: float, timeout: float = CONVERGE_TIMEOUT_S) -> float:
    """Seconds until every namespace has a route to every other node and no route has changed for
    ``quiet`` seconds after (NetnsError after ``timeout``; ``alive()`` returns a message when a babeld has died)."""
    t0 = time.time()
    last: dict[str, dict[str, str]] = {}
    since = t0
    while True:
        now = time.time()
        tables = {n: mesh_routes(kernel_routes(ns), list(addrs.values())) for n, ns in namespaces.items()}
        if tables != last:
            last, since = tables, now
        missing_routes = {n: sorted(set(addrs.values()) - {addrs[n]} - set(t)) for n, t in tables.items()}
        missing_routes = {n: m for n, m in missing_routes.items() if m}
        if not missing_routes and now - since >= quiet:
            return round(since - t0, 3)
        msg = alive()
        if msg:
            raise NetnsError(msg)
        if now - t0 > timeout:
            why = ("; ".join(f"{n} to {', '.join(m)}" for n, m in missing_routes.items()) if missing_routes
                   else f"routes still changing {now - since:.1f} s before the end")
            raise NetnsError(f"babeld: no stable routes after {timeout:.0f} s: {why}")
        time.sleep(0.2)


__all__ = ["BABELD", "BABEL_PORT", "BabelWatch", "config_text", "loss_rules", "parse_proc_route", "route_diff",
           "wait_converged", "missing", "mesh_routes", "kernel_routes"]
