"""Names, ownership and clean-up of what the netns backend creates on the host.

Everything a run creates lives inside its own namespaces ``aspn-<run id>-<node>``:
veths (created straight into them, never in the root namespace), addresses,
routes, qdiscs, iptables rules and the processes.  Deleting a namespace after
killing its processes removes all of it.  The only thing outside is the
``unreachable 10.2.0.0/16`` route of the root namespace (safety: no test packet
can leave towards a real network), shared with the virtual Pis (``aspv-*``),
which are never touched here.

A run records its owner (pid and start time) in ``/run/aspan-netns/<run id>.json``;
namespaces whose owner is gone are leftovers of a crashed run: a new run refuses
to start on top of them and ``aspan clean`` removes them.
"""
from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import re
import secrets
import signal
import time
from pathlib import Path
from typing import Iterator

from experiments.backends import kernel_plan
from experiments.backends.kernel_plan import NS_PREFIX, PlanError, ns_name
from experiments.backends.netns.sh import NetnsError, run

PREFIX = NS_PREFIX
SHARED_PREFIXES = ("aspn-", "aspv-")     # namespaces that rely on the unreachable route
STATE_DIR = Path("/run/aspan-netns")
TEST_RANGE = ipaddress.IPv4Network("10.2.0.0/16")
ROUTE_MARKER = "route-added"
_NS_RE = re.compile(r"^aspn-([0-9a-f]{6})-")


# ---- names -------------------------------------------------------------------
def new_run_id() -> str:
    return secrets.token_hex(3)


def veth_name(rid: str, link: int, end: str) -> str:
    """``an<run id><link><a|b>`` (:func:`experiments.backends.kernel_plan.veth_name`); NetnsError if too long."""
    try:
        return kernel_plan.veth_name(rid, link, end)
    except PlanError as e:
        raise NetnsError(str(e)) from None


def run_id_of(ns: str) -> str | None:
    m = _NS_RE.match(ns)
    return m.group(1) if m else None


def list_namespaces(prefixes: tuple[str, ...] = (PREFIX,)) -> list[str]:
    out = run(["ip", "netns", "list"]).stdout
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    return sorted(n for n in names if n.startswith(prefixes))


# ---- ownership -------------------------------------------------------------------
def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]   # field 22, starttime


@contextlib.contextmanager
def locked() -> Iterator[None]:
    """Serialise route and leftover decisions between concurrent runs and ``aspan clean``."""
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    with open(STATE_DIR / "lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def record_run(rid: str, nodes: list[str]) -> Path:
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    path = STATE_DIR / f"{rid}.json"
    path.write_text(json.dumps({"pid": os.getpid(), "start": _start_time(os.getpid()),
                                "namespaces": [ns_name(rid, n) for n in nodes], "created": time.time()}))
    return path


def forget_run(rid: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        (STATE_DIR / f"{rid}.json").unlink()


def owner_alive(rid: str) -> bool:
    try:
        rec = json.loads((STATE_DIR / f"{rid}.json").read_text())
    except (OSError, ValueError):
        return False
    start = rec.get("start")
    return start is not None and _start_time(int(rec.get("pid", -1))) == start


def leftovers() -> list[str]:
    """Our namespaces whose run is no longer alive."""
    return [ns for ns in list_namespaces() if not owner_alive(run_id_of(ns) or "")]


# ---- removal ---------------------------------------------------------------------
def ns_pids(ns: str) -> list[int]:
    r = run(["ip", "netns", "pids", ns], check=False)
    return [int(p) for p in r.stdout.split() if p.isdigit()]


def kill_ns_processes(ns: str, grace_s: float = 2.0) -> int:
    """SIGTERM every process in ``ns``, SIGKILL what is left after ``grace_s``; how many there were."""
    pids = ns_pids(ns)
    seen = set(pids)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        end = time.time() + (grace_s if sig == signal.SIGTERM else 5.0)
        while time.time() < end and ns_pids(ns):
            time.sleep(0.05)
        pids = ns_pids(ns)
        seen.update(pids)
        if not pids:
            break
    left = ns_pids(ns)
    if left:
        raise NetnsError(f"processes {left} in namespace {ns} survive SIGKILL")
    return len(seen)


def delete_namespace(ns: str) -> int:
    """Kill its processes and delete it (its veths, qdiscs and iptables rules go with it)."""
    n = kill_ns_processes(ns)
    run(["ip", "netns", "del", ns], check=False)
    if ns in list_namespaces():
        raise NetnsError(f"namespace {ns} could not be deleted")
    return n


def clean(force: bool = False) -> list[str]:
    """Remove leftover ``aspn-*`` namespaces (all of them with ``force``); returns what was done."""
    done: list[str] = []
    with locked():
        targets = list_namespaces() if force else leftovers()
        for ns in targets:
            n = delete_namespace(ns)
            done.append(f"deleted namespace {ns}" + (f" (killed {n} processes)" if n else ""))
        live = {run_id_of(ns) for ns in list_namespaces()}
        for rec in STATE_DIR.glob("*.json"):
            if rec.stem not in live and (force or not owner_alive(rec.stem)):
                rec.unlink()
                done.append(f"removed run record {rec.name}")
        if _release_route_locked():
            done.append(f"removed the root namespace's unreachable {TEST_RANGE} route (added by this backend)")
    return done


# ---- the safety route ------------------------------------------------------------
def _range_routes() -> list[str]:
    """Routes of the root namespace into the test range (any prefix inside it, or equal)."""
    out = run(["ip", "-4", "route", "show", "root", str(TEST_RANGE)]).stdout
    return [line.strip() for line in out.splitlines() if line.strip()]


def ensure_unreachable_route() -> None:
    """The root namespace must route the test range nowhere: one ``unreachable`` route, nothing else."""
    with locked():
        routes = _range_routes()
        others = [r for r in routes if not r.startswith(f"unreachable {TEST_RANGE}")]
        if others:
            raise NetnsError(f"the root namespace routes into the test range {TEST_RANGE}: {others}; "
                             "refusing to run (test packets could leave towards a real network)")
        if not routes:
            run(["ip", "route", "add", "unreachable", str(TEST_RANGE)])
            (STATE_DIR / ROUTE_MARKER).write_text(str(os.getpid()))


def release_route() -> bool:
    with locked():
        return _release_route_locked()


def _release_route_locked() -> bool:
    """Remove the route only if this backend added it and no aspn-/aspv- namespace is left."""
    marker = STATE_DIR / ROUTE_MARKER
    if not marker.exists() or list_namespaces(SHARED_PREFIXES):
        return False
    if any(r.startswith(f"unreachable {TEST_RANGE}") for r in _range_routes()):
        run(["ip", "route", "del", "unreachable", str(TEST_RANGE)], check=False)
    marker.unlink()
    return True


def check_addresses(addresses: dict[str, str]) -> None:
    for node, addr in addresses.items():
        if ipaddress.IPv4Address(addr) not in TEST_RANGE:
            raise NetnsError(f"topology.addresses.{node}: {addr} is outside the test range {TEST_RANGE} "
                             "(the netns backend keeps every node address inside it)")
