"""``aspan deploy doctor``: what breaks a bench of Pis on day one, checked before a run (issue 37, item 3).

Per host, one named check each, ``PASS``, ``FAIL`` (with the command that fixes it) or ``SKIP`` (with
the reason):

========== ==========================================================================================
ibss       the mesh interface's phy lists IBSS in "Supported interface modes" (``iw list``), and the
           cell's frequency is in its frequency list, not disabled, no-IR or a radar (DFS) channel
regdomain  ``iw reg get``: a country is set (not ``00``, the world domain), it is the inventory's
           ``mesh.country`` when that is given, and a rule of it covers the channel without NO-IR,
           PASSIVE-SCAN, NO-IBSS or DFS
power-save ``iw dev IFACE get power_save`` says off
managers   NetworkManager (``nmcli -t -f DEVICE,STATE device``), wpa_supplicant and dhcpcd
           (``pgrep -a``, ``/etc/dhcpcd.conf``) leave the mesh interface alone
clock      the offset to this machine (deploy.clock, midpoint of the shortest SSH round trip), its
           error included, is within :data:`CLOCK_BOUND_S`
nfqueue    ``nfnetlink_queue`` is loaded or loads (``sudo modprobe``), or is built in: only for the
           kernel data plane (``pi.data_plane: kernel``); otherwise SKIP
disk       at least :data:`MIN_FREE_BYTES` free where the install directory lives
version    the project installed in the host's venv has this machine's version and the same code
           (a hash of every ``.py`` file of its packages)
========== ==========================================================================================

The three radio checks SKIP, saying so, on a host whose inventory entry says ``radio: false`` (the
virtual Pis' veth ``mesh0``: no radio, no IBSS, no regulatory domain).

Every check is a pure judge over command outputs (no I/O, unit-tested on recorded outputs in
tests/data/iw); :func:`examine` is the one driver: one shell script per host prints every command's
output between markers (:func:`doctor_script`, output capped per command), plus the clock's round
trips on a second channel of the same SSH connection.

Bounds:

- :data:`CLOCK_BOUND_S` = 0.1 s.  The logs are aligned with the offset measured at the start of each
  repetition (meta.json ``clock_offsets``); what that leaves is the drift during the repetition.  A
  clock kept by NTP (systemd-timesyncd, chrony) is within a few ms of a laptop that is; a Pi off by
  more than 100 ms is not synchronised at all, and a free-running clock drifts by up to ~100 ppm,
  60 ms over a 10-minute repetition: the offsets would no longer hold to its end.
- :data:`MIN_FREE_BYTES` = 1 GiB.  experiments/paper-lossy.yaml (6 variants x 5 repetitions of
  16,000 segments) wrote 4.3 MB per repetition on its busiest node (a forwarder): ~130 MB per Pi for
  the whole run, kept on the Pi as well as gathered; 1 GiB holds several such runs and keeps the SD
  card from filling up (a full root file system stops journald and apt as well as the run).
"""
from __future__ import annotations

import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Callable

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"
CHECKS = ("ibss", "regdomain", "power-save", "managers", "clock", "nfqueue", "congestion", "disk", "version")
CLOCK_BOUND_S = 0.1
CLOCK_SAMPLES = 5
MIN_FREE_BYTES = 1 << 30
OUTPUT_CAP = 65536            # bytes of one command's output read from a host (head -c)
MARK = "@@aspan-doctor"
# the top-level packages of the wheel (pyproject.toml [tool.setuptools.packages.find]; a test keeps them equal)
PACKAGES = ("aspan", "etx", "routing", "tcp_user", "experiments", "deploy", "plots")
DISTRIBUTION = "aspan-testbed"
SBIN_PATH = "/usr/local/sbin:/usr/sbin:/sbin"

# The project's version and a manifest of its code, printed the same way here and on a host: every .py file of
# the packages (directories with an __init__.py, as setuptools finds them), its path and a hash of its content.
# Files only the host has are not counted against it: a stale build/lib of the orchestrator's source tree (which
# setuptools does not clean) may put modules into the wheel that nothing imports any more.
DIGEST_PY = (
    "import hashlib, os, importlib.util as u, importlib.metadata as m\n"
    f"print('version', m.version({DISTRIBUTION!r}))\nfor top in {PACKAGES!r}:\n"
    "    s = u.find_spec(top)\n"
    "    if s is None or not s.submodule_search_locations:\n"
    "        continue\n"
    "    root = list(s.submodule_search_locations)[0]\n"
    "    for d, dirs, files in os.walk(root):\n"
    "        dirs[:] = sorted(x for x in dirs if os.path.isfile(os.path.join(d, x, '__init__.py')))\n"
    "        for f in sorted(files):\n"
    "            if f.endswith('.py'):\n"
    "                p = os.path.join(d, f)\n"
    "                print('file', os.path.relpath(p, os.path.dirname(root)),\n"
    "                      hashlib.sha256(open(p, 'rb').read()).hexdigest()[:16])\n")


def parse_manifest(text: str) -> tuple[str | None, dict[str, str]]:
    """The output of :data:`DIGEST_PY`: (version, path -> hash)."""
    version = None
    files: dict[str, str] = {}
    for line in text.splitlines():
        w = line.split()
        if len(w) == 2 and w[0] == "version":
            version = w[1]
        elif len(w) == 3 and w[0] == "file":
            files[w[1]] = w[2]
    return version, files


@dataclass(frozen=True)
class Result:
    """One check on one host."""

    check: str
    status: str                 # PASS | FAIL | SKIP
    detail: str
    fix: str | None = None      # FAIL: the command (or step) that fixes it

    def lines(self) -> list[str]:
        out = [f"{self.status} {self.check}: {self.detail}"]
        if self.status == FAIL and self.fix:
            out.append(f"    fix: {self.fix}")
        return out


@dataclass(frozen=True)
class Context:
    """What the judges need to know of the host and the run besides the outputs."""

    iface: str
    freq: int                           # the cell's frequency, MHz
    channel: int
    country: str | None                 # the inventory's mesh.country
    radio: bool = True
    kernel: bool | None = None          # the kernel data plane: True, False, None (no experiment given)
    install_dir: str = "/home/pi/aspan"
    inventory: str = "INV.yaml"         # for the fix commands
    congestion: tuple[str, ...] = ()    # the kernel data plane's netns.congestion values (the senders' controls)


# ---- sections of the script's output ------------------------------------------------------------
@dataclass
class Section:
    text: str
    rc: int | None


def split_sections(out: str) -> dict[str, Section]:
    """The script's output, by section name: each command's output and exit status."""
    secs: dict[str, Section] = {}
    cur: str | None = None
    buf: list[str] = []
    for line in out.splitlines():
        if line.startswith(MARK + " "):
            cur, buf = line.split(None, 1)[1].strip(), []
            secs[cur] = Section("", None)
        elif line.startswith(MARK + "-rc ") and cur is not None:
            parts = line.split()
            rc = int(parts[-1]) if parts[-1].lstrip("-").isdigit() else None
            secs[cur] = Section("\n".join(buf), rc)
            cur = None
        elif cur is not None:
            buf.append(line)
    if cur is not None:        # cut off (the cap, a dying shell): what arrived
        secs[cur] = Section("\n".join(buf), None)
    return secs


# ---- iw list: IBSS and the channel ----------------------------------------------------------------
@dataclass
class Phy:
    name: str
    modes: list[str] = field(default_factory=list)
    freqs: dict[int, tuple[int | None, str]] = field(default_factory=dict)   # MHz -> (channel, flags)


_FREQ = re.compile(r"\*\s+(\d+)(?:\.\d+)?\s+MHz\s+\[(\d+)\]\s*(.*)$")


def parse_iw_list(text: str) -> dict[str, Phy]:
    """``iw list`` (or ``iw phy``, ``iw phy phyN info``): each phy's interface modes and frequencies.

    Lines before any ``Wiphy`` header (an excerpt such as ``iw list | grep -A9 modes``) form a phy named ``?``.
    """
    phys: dict[str, Phy] = {}
    cur = Phy("?")
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        m = re.match(r"Wiphy (\S+)", line)
        if m:
            cur = phys.setdefault(m.group(1), Phy(m.group(1)))
            section = ""
            continue
        if line.endswith(":") and not line.startswith("*"):
            section = line[:-1]
            if cur.name == "?" and "?" not in phys:
                phys["?"] = cur
            continue
        if not line.startswith("*"):
            if section in ("Supported interface modes", "Frequencies"):
                section = ""
            continue
        if section == "Supported interface modes":
            cur.modes.append(line.lstrip("* ").strip())
        elif section == "Frequencies":
            fm = _FREQ.match(line)
            if fm:
                cur.freqs[int(fm.group(1))] = (int(fm.group(2)), fm.group(3).strip())
    return phys


def phy_of(dev_info: str) -> str | None:
    """The phy of an interface, from ``iw dev IFACE info`` (``wiphy N``)."""
    m = re.search(r"^\s*wiphy (\d+)", dev_info, re.M)
    return f"phy{m.group(1)}" if m else None


def _usable(flags: str) -> str | None:
    """Why a channel with these ``iw list`` flags cannot carry an IBSS cell, or None."""
    f = flags.lower()
    for word, why in (("disabled", "disabled"), ("no ir", "no-IR (may not initiate radiation: no IBSS can start)"),
                      ("passive scan", "passive scan only (no IBSS can start)"), ("no ibss", "no IBSS"),
                      ("radar detection", "a radar (DFS) channel (no IBSS can start before a CAC)")):
        if word in f:
            return why
    return None


def judge_ibss(list_sec: Section | None, dev_sec: Section | None, ctx: Context) -> Result:
    """Check 1: the driver does IBSS and the cell's channel is usable on the interface's phy."""
    name = "ibss"
    if not ctx.radio:
        return _not_radio(name, ctx)
    if list_sec is None or not list_sec.text.strip():
        return Result(name, FAIL, "iw list printed nothing (no wireless phy, or iw missing)", "sudo apt-get install iw")
    phys = parse_iw_list(list_sec.text)
    want = phy_of(dev_sec.text) if dev_sec is not None else None
    if dev_sec is not None and want is None:
        return Result(name, FAIL, f"iw knows no wireless interface {ctx.iface}: {_first(dev_sec.text)}",
                      f"set iface in {ctx.inventory} to the mesh radio (iw dev lists them)")
    if want in phys:
        phy = phys[want]
    elif len(phys) == 1:
        phy = next(iter(phys.values()))
    else:
        return Result(name, FAIL, f"iw list shows no {want or 'single phy'} (phys: {', '.join(phys) or 'none'})",
                      f"set iface in {ctx.inventory} to the mesh radio (iw dev lists them)")
    label = phy.name if phy.name != "?" else "the phy"
    if "IBSS" not in phy.modes:
        return Result(name, FAIL, f"{ctx.iface} ({label}): the driver lists no IBSS among its interface modes "
                      f"({', '.join(phy.modes) or 'none listed'})",
                      "no command fixes a driver: use a radio whose driver lists IBSS (iw list), e.g. a USB "
                      f"dongle with ath9k_htc or mt76, and set iface in {ctx.inventory} to it")
    if not phy.freqs:
        return Result(name, FAIL, f"{ctx.iface} ({label}) lists IBSS but iw list shows no frequency list for it "
                      f"(truncated output?): {ctx.freq} MHz cannot be checked",
                      "sudo iw list  (and read its Frequencies)")
    good = sorted(ch for f, (ch, fl) in phy.freqs.items() if ch is not None and _usable(fl) is None and f < 3000)
    if ctx.freq not in phy.freqs:
        return Result(name, FAIL, f"{ctx.iface} ({label}) lists IBSS, but not {ctx.freq} MHz (channel {ctx.channel})",
                      f"pick a channel it lists: mesh: {{channel: N}} in {ctx.inventory}"
                      + (f" (2.4 GHz: {_chans(good)})" if good else ""))
    why = _usable(phy.freqs[ctx.freq][1])
    if why:
        return Result(name, FAIL, f"{ctx.iface} ({label}) lists IBSS, but {ctx.freq} MHz (channel {ctx.channel}) "
                      f"is {why}",
                      f"pick another channel: mesh: {{channel: N}} in {ctx.inventory}"
                      + (f" (usable here: {_chans(good)})" if good else "")
                      + "; or set the right country: sudo iw reg set XX")
    return Result(name, PASS, f"{ctx.iface} ({label}) lists IBSS; {ctx.freq} MHz (channel {ctx.channel}) "
                  f"{phy.freqs[ctx.freq][1] or 'enabled'}")


def _chans(chans: list[int]) -> str:
    return ", ".join(map(str, chans[:14]))


def _first(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "no output")[:200]


def _not_radio(name: str, ctx: Context) -> Result:
    return Result(name, SKIP, f"the inventory says {ctx.iface} is not a radio (radio: false): nothing to check")


# ---- iw reg get ------------------------------------------------------------------------------------
@dataclass
class RegDomain:
    scope: str                          # "global" or "phy#N"
    country: str | None = None
    self_managed: bool = False
    rules: list[tuple[int, int, list[str]]] = field(default_factory=list)   # (start, end MHz, flags)


_RULE = re.compile(r"\((\d+)\s*-\s*(\d+)\s*@\s*\d+\)\s*,\s*\([^)]*\)\s*,\s*\([^)]*\)\s*(.*)$")


def parse_reg(text: str) -> list[RegDomain]:
    """``iw reg get``: the global domain (lines before any ``phy#``) and each phy's own."""
    doms: list[RegDomain] = []
    cur: RegDomain | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if line == "global" or re.match(r"phy#\d+", line):
            cur = RegDomain(line.split()[0], self_managed="self-managed" in line)
            doms.append(cur)
            continue
        m = re.match(r"country (\S+?):", line)
        if m:
            if cur is None or cur.country is not None:
                cur = RegDomain("global")
                doms.append(cur)
            cur.country = m.group(1)
            continue
        rm = _RULE.match(line)
        if rm and cur is not None:
            flags = [f.strip() for f in rm.group(3).split(",") if f.strip()]
            cur.rules.append((int(rm.group(1)), int(rm.group(2)), flags))
    return doms


def judge_reg(reg_sec: Section | None, ctx: Context) -> Result:
    """Check 2: a regulatory domain is set (not 00), is the inventory's country, and allows the channel."""
    name = "regdomain"
    if not ctx.radio:
        return _not_radio(name, ctx)
    want = ctx.country or "XX"
    fix_set = (f"sudo iw reg set {want}" + ("" if ctx.country else " (XX: your two-letter country)")
               + f"; to keep it over reboots: sudo raspi-config nonint do_wifi_country {want}")
    doms = parse_reg(reg_sec.text) if reg_sec is not None else []
    glob = next((d for d in doms if d.scope == "global"), None)
    if glob is None or glob.country is None:
        return Result(name, FAIL, f"iw reg get printed no regulatory domain: {_first(reg_sec.text if reg_sec else '')}",
                      fix_set)
    own = next((d for d in doms if d.self_managed and d.scope != "global"), None)
    dom = own or glob
    if dom.country == "00":
        return Result(name, FAIL, f"no regulatory domain set ({dom.scope}: country 00, the world domain, "
                      "which allows the least and marks channels no-IR)", fix_set)
    if ctx.country and dom.country != ctx.country:
        return Result(name, FAIL, f"country {dom.country} ({dom.scope}), the inventory's mesh.country is {ctx.country}",
                      fix_set)
    lo, hi = ctx.freq - 10, ctx.freq + 10
    rule = next((r for r in dom.rules if r[0] <= lo and hi <= r[1]), None)
    if rule is None:
        return Result(name, FAIL, f"country {dom.country} has no rule covering {ctx.freq} MHz (channel {ctx.channel})",
                      f"pick a channel country {dom.country} allows: mesh: {{channel: N}} in {ctx.inventory}")
    bad = [f for f in rule[2] if f in ("NO-IR", "PASSIVE-SCAN", "NO-IBSS", "DFS")]
    if bad:
        return Result(name, FAIL, f"country {dom.country} allows {ctx.freq} MHz only with {', '.join(bad)} "
                      f"({rule[0]}-{rule[1]} MHz): an IBSS cell cannot start there",
                      f"pick another channel: mesh: {{channel: N}} in {ctx.inventory} "
                      "(1, 6 or 11 are allowed everywhere)")
    return Result(name, PASS, f"country {dom.country} ({dom.scope}); {ctx.freq} MHz allowed "
                  f"({rule[0]}-{rule[1]} MHz{', ' + ', '.join(rule[2]) if rule[2] else ''})")


# ---- power save --------------------------------------------------------------------------------
def judge_power_save(ps_sec: Section | None, ctx: Context) -> Result:
    """Check 3: ``iw dev IFACE get power_save`` says off."""
    name = "power-save"
    if not ctx.radio:
        return _not_radio(name, ctx)
    text = ps_sec.text if ps_sec is not None else ""
    m = re.search(r"Power save:\s*(on|off)", text)
    fix = f"sudo iw dev {ctx.iface} set power_save off"
    if m and m.group(1) == "off":
        return Result(name, PASS, f"{ctx.iface}: power save off")
    if m:
        return Result(name, FAIL, f"{ctx.iface}: power save on (the radio sleeps between beacons: delays and losses "
                      "that are not the mesh's)", fix + f" (aspan deploy mesh -i {ctx.inventory} does it too)")
    if "Operation not supported" in text:
        return Result(name, SKIP, f"{ctx.iface}: the driver reports no power save state for this interface type "
                      f"(iw: {_first(text)}): nothing to turn off")
    return Result(name, FAIL, f"{ctx.iface}: cannot read the power save state: {_first(text)}", fix)


# ---- NetworkManager, wpa_supplicant, dhcpcd ---------------------------------------------------------
def _names_iface(cmdline: str, iface: str) -> bool:
    """Whether a wpa_supplicant/dhcpcd command line names ``iface`` (-i IFACE, -iIFACE, a bare argument)."""
    words = cmdline.split()[1:]
    for i, w in enumerate(words):
        if w == iface or w == f"-i{iface}" or (w == "-i" and i + 1 < len(words) and words[i + 1] == iface):
            return True
        if w.endswith(f"@{iface}") or w == f"--interface={iface}":
            return True
    return False


def judge_managers(nm: Section | None, wpa: Section | None, dhcpcd: Section | None, dhcpcd_conf: Section | None,
                   ctx: Context) -> Result:
    """Check 4: nothing but the mesh step manages the mesh interface."""
    name = "managers"
    i = ctx.iface
    problems: list[str] = []
    fixes: list[str] = []
    seen: list[str] = []
    nm_text = nm.text.strip() if nm is not None else ""
    if nm is None or nm_text == "@@absent":
        seen.append("no nmcli")
    elif "NetworkManager is not running" in nm_text:
        seen.append("NetworkManager not running")
    else:
        state = next((ln.split(":", 1)[1] for ln in nm_text.splitlines() if ln.split(":", 1)[0] == i and ":" in ln),
                     None)
        if state is None:
            seen.append(f"NetworkManager does not list {i}")
        elif state.startswith("unmanaged"):
            seen.append(f"NetworkManager: {i} unmanaged")
        else:
            problems.append(f"NetworkManager manages {i} ({state})")
            fixes.append(f"sudo nmcli device set {i} managed no")
    for sec, daemon in ((wpa, "wpa_supplicant"), (dhcpcd, "dhcpcd")):
        procs = [ln.strip() for ln in (sec.text if sec is not None else "").splitlines() if ln.strip()]
        named = [p for p in procs if _names_iface(p.split(None, 1)[1] if " " in p else p, i)]
        pid = [p.split()[0] for p in named]
        if named:
            problems.append(f"{daemon} runs on {i} (pid {', '.join(pid)}: {named[0].split(None, 1)[-1][:80]})")
            fixes.append(f"sudo systemctl disable --now {daemon}@{i}.service 2>/dev/null; sudo kill {' '.join(pid)}")
        elif daemon == "dhcpcd" and procs:
            conf = dhcpcd_conf.text if dhcpcd_conf is not None else ""
            deny = any(i in ln.split()[1:] for ln in conf.splitlines() if ln.split()[:1] == ["denyinterfaces"])
            allow = [ln.split()[1:] for ln in conf.splitlines() if ln.split()[:1] == ["allowinterfaces"]]
            if deny or (allow and not any(i in a for a in allow)):
                seen.append(f"dhcpcd runs, {i} excluded in /etc/dhcpcd.conf")
            else:
                problems.append(f"dhcpcd runs for every interface ({procs[0].split(None, 1)[-1][:60]}) and "
                                f"/etc/dhcpcd.conf does not exclude {i}: it would give {i} an address of its own")
                fixes.append(f"echo 'denyinterfaces {i}' | sudo tee -a /etc/dhcpcd.conf && "
                             "sudo systemctl restart dhcpcd")
        else:
            seen.append(f"no {daemon} on {i}")
    if problems:
        return Result(name, FAIL, "; ".join(problems), "; ".join(fixes))
    return Result(name, PASS, "; ".join(seen))


# ---- clock, nfnetlink_queue, disk, version -------------------------------------------------------
def judge_clock(offset: float | None, error: float | None, why: str | None = None,
                bound: float = CLOCK_BOUND_S) -> Result:
    """Check 5: |offset| plus the measurement's error bound (half the round trip) within ``bound``."""
    name = "clock"
    fix = ("sudo timedatectl set-ntp true (a Pi without internet: NTP=<this machine's address> in "
           "/etc/systemd/timesyncd.conf and an NTP server here; or once: sudo date -s @$(date +%s.%N) run from here)")
    if offset is None or error is None:
        return Result(name, FAIL, f"the clock offset could not be measured: {why or 'no sample'}",
                      "check that the host's python3 runs (aspan deploy status -i INV)")
    worst = abs(offset) + error
    text = f"offset {offset * 1000:+.1f} ms (+- {error * 1000:.1f} ms)"
    if worst > bound:
        return Result(name, FAIL, f"{text}, beyond the {bound * 1000:.0f} ms the logs' alignment holds to the end of a "
                      "repetition (an unsynchronised clock drifts)", fix)
    return Result(name, PASS, f"{text}, within {bound * 1000:.0f} ms")


def judge_nfqueue(sec: Section | None, ctx: Context) -> Result:
    """Check 6: nfnetlink_queue is present (loaded or built in) after ``sudo modprobe`` (kernel data plane only)."""
    name = "nfqueue"
    if ctx.kernel is None:
        return Result(name, SKIP, "no experiment given (--experiment EXP.yaml): nfnetlink_queue is needed only by "
                      "pi.data_plane: kernel")
    if not ctx.kernel:
        return Result(name, SKIP, "the experiment runs the overlay (pi.data_plane: udp): no NFQUEUE")
    text = sec.text if sec is not None else ""
    where = [w for w, key in (("loaded", "proc_modules yes"), ("in /sys/module", "sys_module yes"),
                              ("queues in /proc/net/netfilter", "proc_net yes"), ("built in", "builtin yes"))
             if key in text]
    if where:
        return Result(name, PASS, "nfnetlink_queue present (" + ", ".join(where) + ")")
    mp = next((ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("modprobe:")), "not tried")
    return Result(name, FAIL, f"nfnetlink_queue is not loaded and does not load (modprobe: {mp})",
                  "sudo modprobe nfnetlink_queue (\"not found\" after a kernel upgrade: reboot the Pi into the new "
                  "kernel; a kernel without it: CONFIG_NETFILTER_NETLINK_QUEUE)")


def judge_congestion(sec: Section | None, ctx: Context) -> Result:
    """Check 7: every congestion control the experiment's kernel senders run (``netns.congestion``) is in the host's
    tcp_available_congestion_control after ``sudo modprobe tcp_<name>`` (kernel data plane only)."""
    name = "congestion"
    if ctx.kernel is None:
        return Result(name, SKIP, "no experiment given (--experiment EXP.yaml): the kernel senders' control is "
                      "the experiment's netns.congestion")
    if not ctx.kernel or not ctx.congestion:
        return Result(name, SKIP, "the experiment runs the overlay (pi.data_plane: udp): its TCP is the user-space one")
    lines = (sec.text if sec is not None else "").splitlines()
    available = next((ln.split(":", 1)[1].split() for ln in lines if ln.startswith("available:")), [])
    missing = [cc for cc in ctx.congestion if cc not in available]
    if not missing:
        return Result(name, PASS, "kernel congestion control " + ", ".join(ctx.congestion) + " available ("
                      + " ".join(available) + ")")
    return Result(name, FAIL, f"no {', '.join(missing)} in this kernel (it offers {' '.join(available) or 'none'})",
                  " ; ".join(f"sudo modprobe tcp_{cc}" for cc in missing) + " (\"not found\": a kernel without "
                  "CONFIG_TCP_CONG_" + missing[0].upper() + "; or run netns.congestion reno or cubic)")


def judge_disk(sec: Section | None, ctx: Context, bound: int = MIN_FREE_BYTES) -> Result:
    """Check 8: ``df -Pk`` of the install directory: at least ``bound`` bytes available."""
    name = "disk"
    lines = [ln.split() for ln in (sec.text if sec is not None else "").splitlines() if ln.strip()]
    row = next((ln for ln in lines[1:] if len(ln) >= 6 and ln[3].isdigit()), None)
    if row is None:
        return Result(name, FAIL, f"df printed no free space for {ctx.install_dir}: {_first(sec.text if sec else '')}",
                      f"df -h {ctx.install_dir}")
    free = int(row[3]) * 1024
    text = f"{free / 2**30:.1f} GiB free on {row[5]} ({ctx.install_dir})"
    if free < bound:
        return Result(name, FAIL, f"{text}: below the {bound / 2**30:.1f} GiB the logs of a run need",
                      f"free space on {row[5]}: sudo apt-get clean; sudo journalctl --vacuum-size=50M; "
                      f"rm -r {ctx.install_dir}/runs/<old experiment> (after aspan deploy gather)")
    return Result(name, PASS, text)


def judge_version(sec: Section | None, local: tuple[str, dict[str, str]], ctx: Context) -> Result:
    """Check 9: the host's installed version and code (:data:`DIGEST_PY`) are this machine's ``local``."""
    name = "version"
    fix = f"aspan deploy setup -i {ctx.inventory}"
    ver, files = parse_manifest(sec.text) if sec is not None else (None, {})
    if sec is None or sec.rc != 0 or ver is None:
        return Result(name, FAIL, f"aspan-testbed is not installed in {ctx.install_dir}/venv "
                      f"({_first(sec.text if sec else '')})", fix)
    if ver != local[0]:
        return Result(name, FAIL, f"aspan-testbed {ver} installed, this machine runs {local[0]}", fix)
    missing = sorted(set(local[1]) - set(files))
    differ = sorted(p for p in local[1] if p in files and files[p] != local[1][p])
    if missing or differ:
        some = ", ".join((differ + missing)[:3]) + (", ..." if len(differ) + len(missing) > 3 else "")
        return Result(name, FAIL, f"aspan-testbed {ver} installed, but its code is not this machine's: "
                      f"{len(differ)} file(s) differ, {len(missing)} missing ({some}): an older build", fix)
    extra = len(set(files) - set(local[1]))
    return Result(name, PASS, f"aspan-testbed {ver}, the same code as here ({len(local[1])} files"
                  + (f"; {extra} more there, not here" if extra else "") + ")")


# ---- the script, the local side, the driver ------------------------------------------------------
def local_version() -> tuple[str, dict[str, str]]:
    """This machine's (version, path -> hash of each .py file), computed as the hosts compute theirs."""
    r = subprocess.run([sys.executable, "-c", DIGEST_PY], capture_output=True, text=True, timeout=60)
    ver, files = parse_manifest(r.stdout)
    if r.returncode != 0 or ver is None:
        return (f"unknown (not installed here: {(r.stderr or r.stdout).strip()[-200:]})", {})
    return ver, files


def doctor_script(host: Any, ctx: Context) -> str:
    """One POSIX shell script printing every command's output (capped) between markers, then its exit status."""
    q = shlex.quote
    i = q(ctx.iface)

    def sec(name: str, cmd: str) -> str:
        return (f"echo '{MARK} {name}'; out=$( {{ {cmd}; }} 2>&1 ); rc=$?; "
                f"printf '%s\\n' \"$out\" | head -c {OUTPUT_CAP}; echo; echo \"{MARK}-rc {name} $rc\"")

    parts = [f'PATH="$PATH:{SBIN_PATH}"; export PATH']
    if ctx.radio:
        parts += [sec("iw-dev", f"iw dev {i} info"), sec("iw-list", "iw list"), sec("iw-reg", "iw reg get"),
                  sec("power-save", f"iw dev {i} get power_save")]
    parts += [
        sec("nmcli", "if command -v nmcli >/dev/null 2>&1; then nmcli -t -f DEVICE,STATE device; "
                     "else echo '@@absent'; fi"),
        sec("wpa", "pgrep -a wpa_supplicant"),
        sec("dhcpcd", "pgrep -a dhcpcd"),
        sec("dhcpcd-conf", "grep -hE '^[[:space:]]*(denyinterfaces|allowinterfaces)' /etc/dhcpcd.conf"),
    ]
    if ctx.kernel:
        sudo = "sudo -n " if host.sudo else ""
        parts.append(sec("nfqueue", f"echo \"modprobe: $({sudo}modprobe nfnetlink_queue 2>&1 && echo ok)\"; "
                                    "grep -q '^nfnetlink_queue ' /proc/modules 2>/dev/null && echo 'proc_modules yes'; "
                                    "[ -d /sys/module/nfnetlink_queue ] && echo 'sys_module yes'; "
                                    "[ -e /proc/net/netfilter/nfnetlink_queue ] && echo 'proc_net yes'; "
                                    "grep -q '/nfnetlink_queue.ko' /lib/modules/$(uname -r)/modules.builtin "
                                    "2>/dev/null && echo 'builtin yes'; true"))
    if ctx.kernel and ctx.congestion:
        sudo = "sudo -n " if host.sudo else ""
        loads = "; ".join(f"{sudo}modprobe tcp_{q(cc)} >/dev/null 2>&1" for cc in ctx.congestion)
        parts.append(sec("congestion", f"{loads}; echo \"available: $(cat "
                                       "/proc/sys/net/ipv4/tcp_available_congestion_control)\""))
    d = q(ctx.install_dir)
    parts.append(sec("disk", f"d={d}; while [ ! -e \"$d\" ]; do d=$(dirname \"$d\"); done; df -Pk \"$d\""))
    venv_py = q(str(PurePosixPath(ctx.install_dir) / "venv" / "bin" / "python"))
    parts.append(sec("version", f"{venv_py} -c {q('exec(' + repr(DIGEST_PY) + ')')}"))   # one line
    return "; ".join(parts) + "; true"


def judge_all(out: str, ctx: Context, clock: tuple[float | None, float | None, str | None],
              local: tuple[str, dict[str, str]]) -> list[Result]:
    """Every check of one host from its script's output and its clock measurement (offset, error, why not)."""
    s = split_sections(out)
    return [
        judge_ibss(s.get("iw-list"), s.get("iw-dev"), ctx),
        judge_reg(s.get("iw-reg"), ctx),
        judge_power_save(s.get("power-save"), ctx),
        judge_managers(s.get("nmcli"), s.get("wpa"), s.get("dhcpcd"), s.get("dhcpcd-conf"), ctx),
        judge_clock(*clock),
        judge_nfqueue(s.get("nfqueue"), ctx),
        judge_congestion(s.get("congestion"), ctx),
        judge_disk(s.get("disk"), ctx),
        judge_version(s.get("version"), local, ctx),
    ]


def context(host: Any, inv: Any, kernel: bool | None, inventory_path: str,
            congestion: tuple[str, ...] = ()) -> Context:
    """The judges' context for one host of an inventory."""
    from deploy.inventory import channel_to_freq
    freq = inv.freq
    channel = inv.mesh["channel"] or next((c for c in range(1, 197) if channel_to_freq(c) == freq), 0)
    return Context(host.iface, freq, channel, inv.mesh["country"], host.radio, kernel, host.install_dir, inventory_path,
                   congestion)


def examine(remote: Any, ctx: Context, local: tuple[str, dict[str, str]],
            measure: Callable[..., Any] | None = None) -> list[Result]:
    """Run the doctor on one host: its script (one SSH command) and the clock's round trips."""
    from paramiko.ssh_exception import SSHException

    from deploy import clock
    out = remote.run(doctor_script(remote.host, ctx), timeout=120).stdout
    try:
        c = (measure or clock.measure)(remote, samples=CLOCK_SAMPLES)
        sample: tuple[float | None, float | None, str | None] = (c.offset, c.error_bound, None)
    except (OSError, RuntimeError, ValueError, SSHException) as e:   # HostError too: the check's failure, named
        sample = (None, None, str(e))
    if remote.dry_run:
        return []
    return judge_all(out, ctx, sample, local)


def report_lines(name: str, results: list[Result]) -> list[str]:
    """The report of one host: one line per check (and its fix under a failure)."""
    return [f"{name}: {ln}" if not ln.startswith("    ") else ln for r in results for ln in r.lines()]


def failed(results: list[Result]) -> list[Result]:
    return [r for r in results if r.status == FAIL]


class DoctorRefused(ValueError):
    """A run refused because a host failed a check of the doctor (the report was printed above)."""


def examine_hosts(remotes: list[Any], contexts: dict[str, Context],
                  measure: Callable[..., Any] | None = None) -> dict[str, list[Result] | BaseException]:
    """The doctor on every host in parallel (deploy.hosts.on_hosts): host name -> its results, or the
    exception that kept it from answering (unreachable, login refused, a command that timed out)."""
    from deploy.hosts import GroupException, by_name, on_hosts
    local: tuple[str, dict[str, str]] = ("<version>", {}) if any(r.dry_run for r in remotes) else local_version()
    try:
        res = on_hosts(remotes, lambda r: examine(r, contexts[r.name], local, measure))
    except GroupException as e:
        res = e.result
    return by_name(res, remotes)
