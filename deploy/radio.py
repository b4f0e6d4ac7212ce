"""The radio settings of a run on the Pis (issue 24, item 5): a fixed bitrate, the RTS threshold, the
transmit power, set with ``iw`` where the radio allows it, checked against what it says it can do.

The experiment asks (``pi.bitrate_mbps`` or ``pi.mcs``, ``pi.rts_threshold``, ``pi.txpower_dbm``; null:
leave the radio as it is); :func:`plan` turns that into a :class:`RadioPlan` for one host.  The kernel
host plan (deploy/kernel.py) carries it: the snapshot reads the radio's state and capabilities
(:func:`state_command`, :func:`parse_state`), a host whose radio cannot do what was asked is refused
before anything changes (:func:`problems`), the apply script sets it (:func:`apply_lines`) and the
restore script sets it back (:func:`restore_lines`): the bitrate mask to every rate (``iw`` cannot read
a mask back, and a mask is not set outside a run), the RTS threshold to the value read before, the
transmit power to automatic (``iw`` prints the power in use, not whether it was fixed).

What the capabilities tell: the rates of the band (``iw phy ... info``, "Bitrates"), whether the radio
has HT (802.11n) capabilities, and, where ``iw`` lists them, the nl80211 commands the driver supports:
a FullMAC radio such as the Raspberry Pi's brcmfmac chooses its rates in firmware and lists no
``set_tx_bitrate_mask``, so a fixed bitrate is refused there with that reason.  A setting the driver
accepts but ignores cannot be seen from here.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Any

LEGACY_RATES = (1.0, 2.0, 5.5, 11.0, 6.0, 9.0, 12.0, 18.0, 24.0, 36.0, 48.0, 54.0)
BITRATE_COMMAND = "set_tx_bitrate_mask"      # nl80211 NL80211_CMD_SET_TX_BITRATE_MASK, as iw lists it


@dataclass
class RadioPlan:
    """What one host's radio is set to for a run (None: left as it is)."""

    iface: str
    band: str                                  # "2.4" or "5" (the cell's frequency)
    bitrate_mbps: float | None = None
    mcs: int | None = None
    rts_threshold: int | None = None
    txpower_dbm: float | None = None

    @property
    def empty(self) -> bool:
        return self.bitrate_mbps is None and self.mcs is None and self.rts_threshold is None \
            and self.txpower_dbm is None


@dataclass
class RadioState:
    """What ``iw`` says of the radio before the run."""

    phy: str | None = None
    rts: str | None = None                     # "off" or a number of bytes
    txpower_dbm: float | None = None
    bitrates: dict[str, list[float]] = field(default_factory=dict)   # band "2.4"/"5" -> Mb/s
    ht: bool = False
    commands: list[str] | None = None          # None: iw listed no "Supported commands"


def plan(pi: Mapping[str, Any], iface: str, freq_mhz: int) -> RadioPlan:
    """The radio plan of one host from the experiment's ``pi`` section and the cell's frequency."""
    return RadioPlan(iface, "2.4" if freq_mhz < 3000 else "5", pi.get("bitrate_mbps"), pi.get("mcs"),
                     pi.get("rts_threshold"), pi.get("txpower_dbm"))


def state_command(iface: str) -> str:
    """Prints ``iw dev IFACE info`` and the info of its phy, in sections the snapshot reads."""
    i = shlex.quote(iface)
    return (f"iw dev {i} info 2>&1; phy=$(iw dev {i} info 2>/dev/null | sed -n 's/^[[:space:]]*wiphy //p'); "
            f"echo '@@phy'; [ -n \"$phy\" ] && iw phy phy$phy info 2>&1; true")


def parse_state(dev_info: list[str], phy_info: list[str]) -> RadioState:
    st = RadioState()
    for line in dev_info:
        m = re.match(r"\s*wiphy (\d+)", line)
        if m:
            st.phy = f"phy{m.group(1)}"
        m = re.match(r"\s*txpower ([\d.]+) dBm", line)
        if m:
            st.txpower_dbm = float(m.group(1))
    band = None
    in_rates = in_cmds = False
    for line in phy_info:
        m = re.match(r"\s*RTS threshold: (\S+)", line)
        if m:
            st.rts = m.group(1)
        m = re.match(r"\s*Band (\d+):", line)
        if m:
            band = "2.4" if m.group(1) == "1" else "5"
            in_rates = False
            continue
        if re.match(r"\s*Capabilities: 0x", line) or "HT Capabilities" in line:
            st.ht = True
        if re.match(r"\s*Bitrates \(non-HT\):", line):
            in_rates = True
            continue
        if in_rates:
            m = re.match(r"\s*\* ([\d.]+) Mbps", line)
            if m and band is not None:
                st.bitrates.setdefault(band, []).append(float(m.group(1)))
                continue
            in_rates = False
        if re.match(r"\s*Supported commands:", line):
            in_cmds, st.commands = True, []
            continue
        if in_cmds:
            m = re.match(r"\s*\* (\S+)", line)
            if m:
                st.commands.append(m.group(1))     # type: ignore[union-attr]
            else:
                in_cmds = False
    return st


def problems(p: RadioPlan, st: RadioState) -> list[str]:
    """What the radio cannot do of the plan, each with the reason (empty: it can, as far as iw tells)."""
    out: list[str] = []
    if p.empty:
        return out
    if st.phy is None:
        return [f"{p.iface}: iw names no wiphy (not a wireless interface?): the radio settings cannot be set"]
    fixed = p.bitrate_mbps is not None or p.mcs is not None
    if fixed and st.commands is not None and BITRATE_COMMAND not in st.commands:
        out.append(f"{p.iface}: the driver lists no {BITRATE_COMMAND}: it picks its rates itself (a FullMAC radio "
                   "such as the Pi's brcmfmac does so in firmware); leave pi.bitrate_mbps and pi.mcs null")
    if p.bitrate_mbps is not None and p.bitrate_mbps not in st.bitrates.get(p.band, []):
        have = ", ".join(f"{r:g}" for r in st.bitrates.get(p.band, [])) or "none"
        out.append(f"{p.iface}: pi.bitrate_mbps {p.bitrate_mbps:g} is not a rate of its {p.band} GHz band ({have})")
    if p.mcs is not None and not st.ht:
        out.append(f"{p.iface}: pi.mcs {p.mcs} needs 802.11n (HT), and the radio lists no HT capabilities")
    return out


def apply_lines(p: RadioPlan, st: RadioState) -> list[str]:
    """Shell lines (root, ``set -e``) that set the plan."""
    i = shlex.quote(p.iface)
    out = []
    if p.bitrate_mbps is not None:
        out.append(f"iw dev {i} set bitrates legacy-{p.band} {p.bitrate_mbps:g}")
    elif p.mcs is not None:
        out.append(f"iw dev {i} set bitrates ht-mcs-{p.band} {p.mcs}")
    if p.rts_threshold is not None:
        out.append(f"iw phy {st.phy} set rts {p.rts_threshold}")
    if p.txpower_dbm is not None:
        out.append(f"iw dev {i} set txpower fixed {round(p.txpower_dbm * 100)}")    # iw takes mBm
    return out


def restore_lines(p: RadioPlan, st: RadioState) -> list[str]:
    """Shell lines (the restore script's ``try`` wrapper) that undo :func:`apply_lines`."""
    i = shlex.quote(p.iface)
    out = []
    if p.bitrate_mbps is not None or p.mcs is not None:
        out.append(f"try iw dev {i} set bitrates")                # no argument: every rate again
    if p.rts_threshold is not None and st.rts is not None:
        out.append(f"try iw phy {st.phy} set rts {st.rts}")
    if p.txpower_dbm is not None:
        out.append(f"try iw dev {i} set txpower auto")
    return out


def describe(p: RadioPlan) -> str:
    parts = []
    if p.bitrate_mbps is not None:
        parts.append(f"fixed bitrate {p.bitrate_mbps:g} Mb/s")
    if p.mcs is not None:
        parts.append(f"fixed HT MCS {p.mcs}")
    if p.rts_threshold is not None:
        parts.append(f"RTS threshold {p.rts_threshold} bytes")
    if p.txpower_dbm is not None:
        parts.append(f"transmit power {p.txpower_dbm:g} dBm")
    return ", ".join(parts) or "as it is"
