"""``aspan deploy mesh``: the wireless interface in IBSS (ad-hoc) mode with the static mesh address.

Every command checks the current state first, so running ``mesh`` again changes
nothing on a host that is already in the cell.  Needs root (``sudo -n`` unless the
ssh user is root) and ``iw``.  After the commands, each host's state is read back
and reported: interface type, joined SSID and frequency, link state, addresses.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from deploy.hosts import Remote
from deploy.inventory import Host, Inventory


def mesh_commands(host: Host, inv: Inventory) -> list[str]:
    """The idempotent commands that put ``host.iface`` into the inventory's IBSS cell."""
    q = shlex.quote
    i = q(host.iface)
    m = inv.mesh
    ssid, freq = m["ssid"], inv.freq
    freq_re = q(f"{freq}" + r"\(\.0\)\{0,1\}")   # iw prints "freq: 2412" or "freq: 2412.0"
    join = f"iw dev {i} ibss join {q(ssid)} {freq} fixed-freq" + (f" {m['bssid']}" if m["bssid"] else "")
    cmds = [
        # NetworkManager (Raspberry Pi OS bookworm) would take the interface back
        f"if command -v nmcli >/dev/null 2>&1 && ! nmcli -t -f DEVICE,STATE device status | grep -qx "
        f"{q(host.iface + ':unmanaged')}; then nmcli device set {i} managed no; fi",
    ]
    if m["country"]:
        cmds.append(f"iw reg get | grep -q {q('country ' + m['country'] + ':')} || iw reg set {m['country']}")
    cmds += [
        f"iw dev {i} info | grep -q 'type IBSS' || {{ ip link set {i} down && iw dev {i} set type ibss; }}",
        f"ip link set {i} up",
        f"iw dev {i} set power_save off 2>/dev/null || true",
        f"iw dev {i} link | sed -n 's/^[[:space:]]*SSID: //p' | grep -qxF {q(ssid)} && "
        f"iw dev {i} link | sed -n 's/^[[:space:]]*freq: //p' | grep -qx {freq_re} || "
        f"{{ iw dev {i} ibss leave >/dev/null 2>&1; {join}; }}",
        f"ip addr replace {host.mesh_address}/{m['prefix']} dev {i}",
    ]
    return cmds


def state_command(host: Host) -> str:
    """Prints the interface's iw info, iw link and ip addresses, in marked sections."""
    i = shlex.quote(host.iface)
    return (f"echo '--info'; iw dev {i} info 2>&1; echo '--link'; iw dev {i} link 2>&1; "
            f"echo '--addr'; ip -o -4 addr show dev {i} 2>&1; echo '--ip'; ip -o link show dev {i} 2>&1; true")


@dataclass
class MeshState:
    iface: str
    type: str | None = None
    ssid: str | None = None
    freq: int | None = None
    up: bool = False
    addresses: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, iface: str, out: str) -> "MeshState":
        sections: dict[str, list[str]] = {}
        cur = ""
        for ln in out.splitlines():
            if ln.startswith("--") and ln[2:] in ("info", "link", "addr", "ip"):
                cur = ln[2:]
                sections[cur] = []
            elif cur:
                sections[cur].append(ln)
        st = cls(iface)
        for ln in sections.get("info", []):
            mt = re.match(r"\s*type (\S+)", ln)
            if mt:
                st.type = mt.group(1)
        for ln in sections.get("link", []):
            ms = re.match(r"\s*SSID: (.*)$", ln)
            mf = re.match(r"\s*freq: (\d+)", ln)
            if ms:
                st.ssid = ms.group(1).strip()
            if mf:
                st.freq = int(mf.group(1))
        for ln in sections.get("addr", []):
            ma = re.search(r"inet (\S+)", ln)
            if ma:
                st.addresses.append(ma.group(1))
        st.up = any(re.search(r"<[^>]*\bUP\b", ln) for ln in sections.get("ip", []))
        return st

    def ok(self, host: Host, inv: Inventory) -> bool:
        want = f"{host.mesh_address}/{inv.mesh['prefix']}"
        return (self.type == "IBSS" and self.ssid == inv.mesh["ssid"] and self.freq == inv.freq
                and self.up and want in self.addresses)

    def describe(self) -> str:
        cell = f"joined {self.ssid} at {self.freq} MHz" if self.ssid else "not joined"
        return (f"{self.iface}: type {self.type or 'unknown'}, {cell}, {'up' if self.up else 'down'}, "
                f"{', '.join(self.addresses) or 'no IPv4 address'}")


def read_state(remote: Remote) -> MeshState:
    out = remote.run(state_command(remote.host), root=True).stdout
    return MeshState.parse(remote.host.iface, out)


def configure(remote: Remote, inv: Inventory) -> MeshState:
    """Run the mesh commands on one host and read its state back."""
    for cmd in mesh_commands(remote.host, inv):
        remote.run(cmd, root=True)
    return read_state(remote)
