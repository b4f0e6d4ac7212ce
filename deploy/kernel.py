"""The kernel data plane on a host: save, apply and restore routes, sysctls, offloads, iptables rules.

``deploy`` knows no experiment: the caller (``experiments.backends.pi_kernel``) gives each
host a :class:`HostPlan` (the same routes, sysctls and rules the netns backend puts in its
namespaces).  Per host and run:

1. :func:`snapshot` (root): the iptables flavour the host runs (``iptables -V``:
   ``nf_tables`` -> ``iptables-nft``, else ``iptables-legacy``), the current values of
   every sysctl, offload and /32 route the plan touches, ``iptables-save``,
   ``ip -4 route`` and the mesh interface's MAC address (:mod:`deploy.macfilter`); a host
   with rules of an earlier run (chains ``ASPAN-*``) or a restore script left behind is
   refused (``aspan deploy stop`` cleans it).
2. :func:`restore_script` is written from that snapshot and uploaded to
   ``<install_dir>/kernel-restore.sh`` *before* anything changes: whatever happens
   next (a failure, Ctrl-C, the orchestrator dying), ``sh kernel-restore.sh`` (run by
   the backend at the end and by ``aspan deploy stop``) stops the run's root processes,
   removes the rules, routes and offload changes, sets the sysctls back, and deletes itself.
3. :func:`apply_script` (root) applies the plan: our rules live in our own chains
   (``ASPAN-PREROUTING`` in raw, ``ASPAN-INPUT|FORWARD|OUTPUT`` in filter) jumped to from
   the top of the built-in chains, so removing them restores the tables exactly.
4. After the restore, :func:`compare` checks ``iptables-save`` and ``ip -4 route`` against
   the snapshot (:func:`normalize_iptables`: counters, comments and tables without any rule
   are not state).
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from deploy import macfilter
from deploy import radio as radio_mod
from deploy.hosts import HostError, Remote
from deploy.nodes import ALIVE_FN, stop_snippet

CHAINS = (("raw", "PREROUTING"), ("filter", "INPUT"), ("filter", "FORWARD"), ("filter", "OUTPUT"))
CHAIN_PREFIX = "ASPAN-"
RESTORE_FILE = "kernel-restore.sh"
OFFLOADS = {"tso": "tcp-segmentation-offload", "gso": "generic-segmentation-offload",
            "gro": "generic-receive-offload"}
APT_LINE = "sudo apt-get install iptables ethtool iproute2 procps"
IPTABLES_BINARIES = {"nft": ("iptables-nft", "iptables-nft-save"), "legacy": ("iptables-legacy", "iptables-legacy-save")}


@dataclass
class HostPlan:
    """What the kernel data plane sets on one host."""

    iface: str
    address: str
    sysctls: dict[str, str]                          # name -> value
    routes: list[tuple[str, str | None]]             # (destination, next hop; None: on-link neighbour)
    advmss: int
    rules: list[tuple[str, str, str]]                # (table, built-in chain, rule)
    pidfiles: list[str] = field(default_factory=list)   # the run's root processes, stopped by the restore
    offloads_off: tuple[str, ...] = ("tso", "gso", "gro")
    radio: radio_mod.RadioPlan | None = None          # bitrate, RTS threshold, transmit power (deploy.radio)


@dataclass
class Snapshot:
    """A host's state before the run, as far as the plan touches it."""

    flavour: str                                     # nft | legacy
    sysctls: dict[str, str]
    offloads: dict[str, str]                         # tso|gso|gro -> on|off (fixed ones left out)
    routes: dict[str, list[str]]                     # destination -> its /32 routes before (ip route lines)
    iptables: str                                    # iptables-save, normalized
    ip_routes: str                                   # ip -4 route, sorted
    leftovers: list[str]
    mac: str | None = None                           # the mesh interface's MAC address (deploy.macfilter)
    radio: radio_mod.RadioState | None = None        # what iw said of the radio (only when the plan sets it)

    @property
    def iptables_cmd(self) -> str:
        return IPTABLES_BINARIES.get(self.flavour, ("iptables-<nft|legacy, from iptables -V>",))[0]


def restore_path(install_dir: str) -> str:
    return str(PurePosixPath(install_dir) / RESTORE_FILE)


def normalize_iptables(text: str) -> str:
    """``iptables-save`` without what is not configuration: comments, counters, and tables that hold
    no rule and only built-in chains with policy ACCEPT (legacy and nft create those on first use)."""
    out: list[str] = []
    table: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        line = re.sub(r"\[\d+:\d+\]", "[0:0]", line)
        if line.startswith("*"):
            table = [line]
            continue
        table.append(line)
        if line == "COMMIT":
            rules = [ln for ln in table[1:-1] if not ln.startswith(":")]
            chains = [ln for ln in table[1:-1] if ln.startswith(":")]
            if rules or any(not ln.endswith("ACCEPT [0:0]") for ln in chains):
                out.extend(table)
            table = []
    return "\n".join(out) + ("\n" if out else "")


def _section(name: str, cmd: str) -> str:
    return f"echo '@@{name}'; {cmd}"


def snapshot_command(plan: HostPlan, install_dir: str) -> str:
    """Prints the sections that :func:`parse_snapshot` reads; needs root (iptables-save)."""
    q = shlex.quote
    parts = [
        _section("version", "iptables -V 2>&1 || echo missing"),
        _section("sysctl", "; ".join(f"echo {q(k)} $(sysctl -n {q(k)} 2>/dev/null || echo '?')" for k in plan.sysctls)
                 or "true"),                         # the overlay's plan (MAC filter only) sets no sysctl
        _section("offload", f"ethtool -k {q(plan.iface)} 2>&1 || true"),
        _section("mac", macfilter.mac_command(plan.iface)),
    ]
    if plan.radio is not None and not plan.radio.empty:
        parts.append(_section("radio", radio_mod.state_command(plan.iface)))
    for dst, _ in plan.routes:
        parts.append(_section(f"route {dst}", f"ip -4 route show exact {q(dst + '/32')}"))
    parts += [
        _section("save", "if iptables -V 2>/dev/null | grep -q nf_tables; then iptables-nft-save; "
                         "else iptables-legacy-save; fi"),
        _section("routes", "ip -4 route show | sort"),
        _section("restore", f"test -f {q(restore_path(install_dir))} && echo present; true"),
    ]
    return "; ".join(parts)


def _sections(out: str) -> dict[str, list[str]]:
    sec: dict[str, list[str]] = {}
    cur: list[str] | None = None
    for line in out.splitlines():
        if line.startswith("@@"):
            cur = sec.setdefault(line[2:].strip(), [])
        elif cur is not None:
            cur.append(line)
    return sec


def parse_snapshot(out: str, plan: HostPlan, install_dir: str) -> Snapshot:
    sec = _sections(out)
    version = " ".join(sec.get("version", [])).strip()
    if not version.startswith("iptables v"):
        raise HostError(f"iptables not found ({version or 'no output'}): {APT_LINE}")
    flavour = "nft" if "nf_tables" in version else "legacy"
    sysctls = {}
    for line in sec.get("sysctl", []):
        name, _, value = line.partition(" ")
        if value.strip() == "?":
            raise HostError(f"sysctl {name} cannot be read (no such key?)")
        sysctls[name] = value.strip()
    offloads: dict[str, str] = {}
    text = "\n".join(sec.get("offload", []))
    for short, long in OFFLOADS.items():
        m = re.search(rf"^{long}: (on|off)( \[fixed\])?", text, re.M)
        if m and not m.group(2):
            offloads[short] = m.group(1)
    if not offloads and plan.offloads_off:
        raise HostError(f"ethtool -k {plan.iface}: {text.strip()[:200] or 'no output'} ({APT_LINE})")
    routes = {dst: [ln.strip() for ln in sec.get(f"route {dst}", []) if ln.strip()] for dst, _ in plan.routes}
    save = "\n".join(sec.get("save", []))
    leftovers = sorted(set(re.findall(r"^:(ASPAN-[A-Z]+)", save, re.M)))
    if sec.get("restore") == ["present"]:
        leftovers.append(restore_path(install_dir))
    mac = macfilter.parse_mac(sec["mac"], plan.iface) if "mac" in sec else None
    radio = None
    if plan.radio is not None and not plan.radio.empty:
        radio = radio_mod.parse_state(sec.get("radio", []), sec.get("phy", []))
        cannot = radio_mod.problems(plan.radio, radio)
        if cannot:      # refused before anything changes: what the radio cannot do, and why
            raise HostError("; ".join(cannot))
    return Snapshot(flavour, sysctls, offloads, routes, normalize_iptables(save),
                    "\n".join(sorted(ln for ln in sec.get("routes", []) if ln.strip())), leftovers, mac, radio)


def apply_script(plan: HostPlan, snap: Snapshot) -> str:
    """Shell (run as root, ``set -e``): sysctls, offloads, routes, our chains and the jumps to them."""
    q = shlex.quote
    ipt = snap.iptables_cmd
    lines = ["set -e"]
    if plan.sysctls:
        lines.append("sysctl -q -w " + " ".join(q(f"{k}={v}") for k, v in plan.sysctls.items()))
    off = [f for f in plan.offloads_off if f in snap.offloads]
    if off:
        lines.append(f"ethtool -K {q(plan.iface)} " + " ".join(f"{f} off" for f in off))
    for dst, via in plan.routes:
        hop = f"via {via} " if via else ""
        lines.append(f"ip route replace {dst}/32 {hop}dev {q(plan.iface)} src {plan.address} advmss {plan.advmss}")
    for table, chain in CHAINS:
        rules = [r for t, c, r in plan.rules if (t, c) == (table, chain)]
        if not rules:
            continue
        ours = CHAIN_PREFIX + chain
        lines.append(f"{ipt} -t {table} -N {ours}")
        lines += [f"{ipt} -t {table} -A {ours} {r}" for r in rules]
        lines.append(f"{ipt} -t {table} -I {chain} 1 -j {ours}")
    if plan.radio is not None and snap.radio is not None:
        lines += radio_mod.apply_lines(plan.radio, snap.radio)
    return "\n".join(lines) + "\n"


def restore_script(plan: HostPlan, snap: Snapshot, install_dir: str) -> str:
    """Shell (run as root) that undoes :func:`apply_script` from any point; exits 1 naming what failed.

    It deletes itself only when everything went back, so ``aspan deploy stop`` can try again.
    """
    q = shlex.quote
    ipt = snap.iptables_cmd
    lines = ["#!/bin/sh", "# written by aspan (pi backend, kernel data plane) before the run changed anything",
             "fail=0", "try() { \"$@\" || { echo \"restore: failed: $*\" >&2; fail=1; }; }", ALIVE_FN.strip()]
    for pf in plan.pidfiles:
        lines.append(stop_snippet(q(pf), 5.0) + " >/dev/null")
    for table, chain in CHAINS:
        ours = CHAIN_PREFIX + chain
        lines.append(f"while {ipt} -t {table} -C {chain} -j {ours} 2>/dev/null; do try {ipt} -t {table} -D {chain} "
                     f"-j {ours}; [ $fail = 0 ] || break; done")
        lines.append(f"if {ipt} -t {table} -n -L {ours} >/dev/null 2>&1; then try {ipt} -t {table} -F {ours}; "
                     f"try {ipt} -t {table} -X {ours}; fi")
    for dst, _ in plan.routes:
        lines.append(f"while ip -4 route show exact {dst}/32 | grep -q .; do try ip route del {dst}/32; "
                     f"[ $fail = 0 ] || break; done")
        for old in snap.routes.get(dst, []):
            lines.append(f"try ip route add {route_args(old)}")
    on = [f"{f} {v}" for f, v in snap.offloads.items() if f in plan.offloads_off]
    if on:
        lines.append(f"try ethtool -K {q(plan.iface)} " + " ".join(on))
    if snap.sysctls:
        lines.append("try sysctl -q -w " + " ".join(q(f"{k}={v}") for k, v in snap.sysctls.items()))
    if plan.radio is not None and snap.radio is not None:
        lines += radio_mod.restore_lines(plan.radio, snap.radio)
    lines.append(f"[ $fail = 0 ] && rm -f {q(restore_path(install_dir))}")
    lines.append("exit $fail")
    return "\n".join(lines) + "\n"


ROUTE_STATE_FLAGS = {"linkdown", "dead", "offload", "trap", "rt_offload", "rt_trap", "pervasive"}


def route_args(line: str) -> str:
    """An ``ip route show`` line as ``ip route add`` arguments (without the state flags it prints)."""
    return " ".join(w for w in line.split() if w not in ROUTE_STATE_FLAGS)


def run_restore_command(install_dir: str) -> str:
    """Runs the host's restore script if there is one; prints ``restored`` or ``nothing``."""
    p = shlex.quote(restore_path(install_dir))
    return f"if [ -f {p} ]; then sh {p} && echo restored; else echo nothing; fi"


def snapshot(remote: Remote, plan: HostPlan) -> Snapshot:
    out = remote.run(snapshot_command(plan, remote.host.install_dir), root=True).stdout
    return parse_snapshot(out, plan, remote.host.install_dir)


def state_now(remote: Remote, plan: HostPlan) -> Snapshot:
    """The host's state now (after a restore), read the same way as the snapshot."""
    return snapshot(remote, plan)


def compare(before: Snapshot, after: Snapshot) -> list[str]:
    """What differs between two snapshots (empty: the host is as it was)."""
    diffs = []
    if before.iptables != after.iptables:
        diffs.append("iptables-save differs from before the run:\n" + _diff(before.iptables, after.iptables))
    if before.ip_routes != after.ip_routes:
        diffs.append("ip -4 route differs from before the run:\n" + _diff(before.ip_routes, after.ip_routes))
    changed = {k: (v, after.sysctls.get(k)) for k, v in before.sysctls.items() if after.sysctls.get(k) != v}
    if changed:
        diffs.append("sysctls differ: " + ", ".join(f"{k} {a} -> {b}" for k, (a, b) in changed.items()))
    if before.radio is not None and after.radio is not None and before.radio.rts != after.radio.rts:
        diffs.append(f"the RTS threshold differs: {before.radio.rts} -> {after.radio.rts}")
    off = {k: (v, after.offloads.get(k)) for k, v in before.offloads.items() if after.offloads.get(k) != v}
    if off:
        diffs.append("offloads differ: " + ", ".join(f"{k} {a} -> {b}" for k, (a, b) in off.items()))
    return diffs


def _diff(a: str, b: str) -> str:
    import difflib
    return "\n".join(difflib.unified_diff(a.splitlines(), b.splitlines(), "before", "after", lineterm="", n=0))
