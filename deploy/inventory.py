"""The inventory YAML: which hosts form the mesh, how to reach them, where to install.

Validated like the experiment files, with the same field declarations (``fieldspec``); every
wrong field, type or value is an ``InventoryError`` naming the file and the field path, all at once.

```yaml
defaults:                      # every host field below may also be set per host
  user: pi
  key_file: ~/.ssh/aspan_ed25519
  iface: wlan0
  install_dir: /home/pi/aspan
mesh: {ssid: aspan-mesh, channel: 1}
hosts:
  - {name: pi-a, node: A, host: 192.168.1.101, mesh_address: 10.2.1.1}
  - {name: pi-b, node: B, host: 192.168.1.102, mesh_address: 10.2.1.2}
```
"""
from __future__ import annotations

import copy
import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from fieldspec import BOOL, INT, NUM, STR, ConfigError, fill, in_range, one_of, raise_all
from fieldspec import Field as F

OPT_BOOL = (bool, type(None))
OPT_STR = (str, type(None))


class InventoryError(ConfigError):
    """An inventory file is invalid.  The message names file, field and expectation."""


def _abs_posix(v: Any) -> str | None:
    return None if str(v).startswith("/") else f"expected an absolute path on the host, got {v!r}"


HOST_FIELDS: dict[str, F] = {
    "user": F(STR, "pi", None, "ssh user"),
    "port": F(INT, 22, in_range(1, 65535), "ssh port"),
    "key_file": F(OPT_STR, None, None, "private key for ssh (relative to the inventory file; ~ expanded)"),
    "iface": F(STR, "wlan0", None, "wireless interface of the mesh"),
    "install_dir": F(STR, "/home/pi/aspan", _abs_posix, "per-host directory: wheels, venv, runs"),
    "work_dir": F(OPT_STR, None, None, "where runs write node configs and logs (default: <install_dir>/runs)"),
    "python": F(STR, "python3", None, "the host's Python (>= 3.11) that creates the venv"),
    "sudo": F(OPT_BOOL, None, None, "prefix root commands (run's MAC filter, mesh, routes, the kernel data plane) "
              "with 'sudo -n': passwordless sudo (default: on unless user is root)"),
    "strict_host_keys": F(BOOL, True, None, "reject hosts whose key is not in known_hosts (false only for virtual Pis)"),
    "known_hosts": F(OPT_STR, None, None, "known_hosts file (default: ~/.ssh/known_hosts)"),
    "connect_timeout_s": F(NUM, 10.0, in_range(0, lo_open=True), "ssh connect timeout"),
    "radio": F(BOOL, True, None, "iface is a WiFi radio; false: a wired stand-in (the virtual Pis' veth), whose "
               "radio checks (aspan deploy doctor: ibss, regdomain, power-save) skip, saying so"),
}

HOST_ONLY: dict[str, F] = {
    "name": F(STR, None, None, "host name in reports (default: the node name)"),
    "node": F(STR, None, None, "the experiment node this host runs (A, B, ...)"),
    "host": F(STR, None, None, "address or name ssh connects to (management network)"),
    "mesh_address": F(STR, None, None, "the host's static IPv4 address on the mesh"),
}

SCHEMA: dict[str, Any] = {
    "defaults": HOST_FIELDS,
    "mesh": {
        "ssid": F(STR, "aspan-mesh", None, "IBSS network name"),
        "channel": F((int, type(None)), None, in_range(1, 196), "WiFi channel (or give freq)"),
        "freq": F((int, type(None)), None, in_range(2412, 5900), "frequency in MHz (default: from channel, else 2412)"),
        "bssid": F(OPT_STR, None, None, "fixed IBSS cell id (avoids cell splits)"),
        "country": F(OPT_STR, None, None, "regulatory domain set with 'iw reg set' before joining"),
        "prefix": F(INT, 24, in_range(8, 30), "prefix length of the mesh addresses"),
    },
    "udp_port": F(INT, 7000, in_range(1024, 65535), "UDP port of the overlay on every host"),
    "start_margin_s": F(NUM, 5.0, in_range(0, lo_open=True), "time for the nodes to start before probing begins"),
    "poll_interval_s": F(NUM, 1.0, in_range(0, lo_open=True), "how often a run polls the hosts"),
    "graph_filter": F(STR, "mac", one_of("mac", "none"),
                      "how the overlay enforces the experiment's graph: mac (each host drops what non-neighbours' "
                      "MAC addresses send, with iptables) or none (the radios hear only their neighbours already, "
                      "or the hosts cannot run iptables: the graph is only the routes, and meta.json says so)"),
    "hosts": F((list,), [], None, "the hosts of the mesh"),
}


@dataclass(frozen=True)
class Host:
    """One host of the inventory, every field resolved."""

    name: str
    node: str
    host: str
    mesh_address: str
    user: str
    port: int
    key_file: str | None
    iface: str
    install_dir: str
    work_dir: str
    python: str
    sudo: bool
    strict_host_keys: bool
    known_hosts: str | None
    connect_timeout_s: float
    radio: bool = True

    @property
    def venv(self) -> str:
        return str(PurePosixPath(self.install_dir) / "venv")

    @property
    def aspan(self) -> str:
        """The ``aspan`` command installed by ``deploy setup``."""
        return str(PurePosixPath(self.venv) / "bin" / "aspan")

    @property
    def root_prefix(self) -> str:
        """What goes before a command that needs root."""
        return "sudo -n " if self.sudo else ""

    def label(self) -> str:
        return f"{self.name} ({self.user}@{self.host}:{self.port})"


@dataclass
class Inventory:
    source: str
    hosts: list[Host]
    mesh: dict[str, Any]
    udp_port: int
    start_margin_s: float
    poll_interval_s: float
    graph_filter: str = "mac"
    raw: dict[str, Any] = field(default_factory=dict)

    def by_node(self) -> dict[str, Host]:
        return {h.node: h for h in self.hosts}

    def select(self, names: list[str] | None) -> list[Host]:
        """The hosts named (by host name or node name), all hosts if ``names`` is empty."""
        if not names:
            return list(self.hosts)
        out = []
        for n in names:
            match = [h for h in self.hosts if n in (h.name, h.node)]
            if not match:
                raise InventoryError(self.source, "hosts", f"no host named {n!r}; hosts: "
                                     + ", ".join(h.name for h in self.hosts))
            out.extend(m for m in match if m not in out)
        return out

    @property
    def freq(self) -> int:
        """The IBSS frequency in MHz: ``freq``, else from ``channel``, else channel 1."""
        if self.mesh["freq"]:
            return int(self.mesh["freq"])
        return channel_to_freq(self.mesh["channel"] or 1)


def channel_to_freq(channel: int) -> int:
    """802.11 channel number to centre frequency in MHz (2.4 GHz and 5 GHz bands)."""
    if channel == 14:
        return 2484
    if 1 <= channel <= 13:
        return 2407 + 5 * channel
    return 5000 + 5 * channel


def _expand_local(path: str, base: Path) -> str:
    p = Path(path).expanduser()
    return str(p if p.is_absolute() else (base / p))


def load_inventory(data: Any, source: str = "inventory.yaml", base_dir: Path | None = None,
                   check_files: bool = True) -> Inventory:
    """Validate a parsed inventory document.

    ``base_dir`` resolves relative ``key_file``/``known_hosts`` paths (default: the
    current directory).  ``check_files`` requires the key files to exist (off for
    ``--dry-run``, which connects nowhere).  Every error of the document is reported at once
    (``InventoryError.errors``), each naming the file and the field path.
    """
    base_dir = base_dir or Path.cwd()
    if not isinstance(data, dict):
        raise InventoryError(source, "", "expected a YAML mapping at the top level")
    errs: list[ConfigError] = []

    def err(path: str, message: str) -> None:
        errs.append(InventoryError(source, path, message))

    top = fill(source, "", SCHEMA, data, InventoryError, errs)
    if not top["hosts"] and not any(e.path == "hosts" for e in errs):
        err("hosts", "expected a non-empty list of hosts")
    mesh = top["mesh"]
    if mesh["ssid"] and not re.fullmatch(r"[A-Za-z0-9_.-]{1,32}", mesh["ssid"]):
        err("mesh.ssid", f"expected 1-32 letters, digits, '.', '_' or '-', got {mesh['ssid']!r}")
    if mesh["bssid"] and not re.fullmatch(r"([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}", mesh["bssid"]):
        err("mesh.bssid", f"expected a MAC address like 02:12:34:56:78:9a, got {mesh['bssid']!r}")
    if mesh["country"] and not re.fullmatch(r"[A-Z]{2}", mesh["country"]):
        err("mesh.country", f"expected a two-letter country code, got {mesh['country']!r}")
    bad_defaults = {e.path.split(".", 1)[1] for e in errs if e.path.startswith("defaults.")}
    defaults = {k: v for k, v in (data.get("defaults") or {}).items() if v is not None and k not in bad_defaults} \
        if isinstance(data.get("defaults"), dict) else {}
    hosts: list[Host] = []
    index: dict[int, int] = {}           # position in hosts -> index in the file (wrong hosts are left out)
    schema_host = {**HOST_ONLY, **HOST_FIELDS}
    for i, raw in enumerate(top["hosts"]):
        where = f"hosts[{i}]"
        if not isinstance(raw, dict):
            err(where, f"expected a mapping, got {type(raw).__name__}")
            continue
        found: list[ConfigError] = []
        h = fill(source, where, schema_host, {**defaults, **raw}, InventoryError, found)
        bad = {e.path for e in found}
        errs.extend(found)
        n_errs = len(errs)
        for req in ("node", "host", "mesh_address"):
            if not h[req] and f"{where}.{req}" not in bad:
                err(f"{where}.{req}", "required field missing")
        if h["node"] and not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", h["node"]):
            err(f"{where}.node", f"expected a node name (letters, digits, _ -), got {h['node']!r}")
        if h["mesh_address"]:
            try:
                ipaddress.IPv4Address(h["mesh_address"])
            except ValueError:
                err(f"{where}.mesh_address", f"expected an IPv4 address, got {h['mesh_address']!r}")
        if not re.fullmatch(r"[A-Za-z0-9_.:-]+", h["iface"]):
            err(f"{where}.iface", f"expected an interface name, got {h['iface']!r}")
        h["name"] = h["name"] or h["node"]
        if h["key_file"]:
            h["key_file"] = _expand_local(h["key_file"], base_dir)
            if check_files and not Path(h["key_file"]).is_file():
                err(f"{where}.key_file", f"no such file: {h['key_file']}")
        if h["known_hosts"]:
            h["known_hosts"] = _expand_local(h["known_hosts"], base_dir)
        h["install_dir"] = str(PurePosixPath(h["install_dir"]))
        if h["work_dir"]:
            bad_dir = _abs_posix(h["work_dir"])
            if bad_dir:
                err(f"{where}.work_dir", bad_dir)
        h["work_dir"] = h["work_dir"] or str(PurePosixPath(h["install_dir"]) / "runs")
        if h["sudo"] is None:
            h["sudo"] = h["user"] != "root"
        if not found and len(errs) == n_errs:
            index[len(hosts)] = i
            hosts.append(Host(**h))
    for attr in ("name", "node", "mesh_address"):
        seen: dict[str, int] = {}
        for k, host in enumerate(hosts):
            v = getattr(host, attr)
            if v in seen:
                err(f"hosts[{index[k]}].{attr}", f"{v!r} repeats hosts[{seen[v]}].{attr}")
            seen[v] = index[k]
    nets = {ipaddress.IPv4Interface(f"{h.mesh_address}/{mesh['prefix']}").network for h in hosts}
    if len(nets) > 1:
        err("hosts", "mesh addresses are not in one /"
            f"{mesh['prefix']} network (an IBSS cell is one subnet): " + ", ".join(sorted(str(n) for n in nets)))
    raise_all(errs)
    return Inventory(source, hosts, mesh, top["udp_port"], float(top["start_margin_s"]),
                     float(top["poll_interval_s"]), top["graph_filter"], copy.deepcopy(data))


def load_inventory_file(path: str | Path, check_files: bool = True) -> Inventory:
    """Read and validate an inventory YAML file."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise InventoryError(str(p), "", f"cannot read: {e.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise InventoryError(str(p), "", f"not valid YAML: {e}") from None
    return load_inventory(data, str(p), p.resolve().parent, check_files=check_files)

