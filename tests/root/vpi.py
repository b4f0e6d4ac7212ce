"""Virtual Raspberry Pis for the deploy tests: one network namespace and one sshd per Pi.

Layout of a lab with id ``<id>`` (4 hex digits) and nodes A..D:

- ``aspv-<id>-<node>``: one namespace per Pi.  Its mesh interface (``mesh0``) has the
  mesh address 10.2.1.x/24; its management interface ``mgmt0`` has 10.99.<k>.(4i+2)/30,
  and an sshd (key-only login, generated host key, ``UsePAM no``, ``StrictModes no``)
  listens there and nowhere else.
- The login: as on a Pi, a user that is not root and has passwordless sudo: ``aspv<id>`` (made by
  ``useradd``, home ``/tmp/aspv-<id>-home`` holding its ``.ssh/authorized_keys`` and the install
  directories, a sudoers drop-in ``/etc/sudoers.d/aspv<id>``; root logins refused).  Every root step
  of the code under test goes through ``sudo -n``.  ``user=None``: root logins instead.
- ``aspv-<id>-air``: a bridge joining every Pi's ``mesh0``: one broadcast domain, as
  an IBSS cell is.  The A-B-C-D chain comes from the overlay's own static routes (or
  from ``aspan deploy routes`` for kernel TCP).
- Root namespace: one veth per Pi (``aspv<id>m<i>``, 10.99.<k>.(4i+1)/30) and, towards
  the mesh range, only ``unreachable 10.2.0.0/16`` (added if absent, removed at the end
  only if this lab added it and no other ``aspn-*``/``aspv-*`` namespace exists).

The Pis share the orchestrator's file system (and its users): only the network is isolated.
Everything started here is stopped by :meth:`VirtualPiLab.stop` (the user, its home and the
sudoers drop-in are removed too), which also reports any process it had to kill inside the
namespaces besides the sshds (a leak of the code under test).
"""
from __future__ import annotations

import ipaddress
import os
import random
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
import yaml


SSHD = "/usr/sbin/sshd"


MESH_NET = "10.2.1"


UNREACHABLE = "10.2.0.0/16"


DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(list(args), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
    return r


def available() -> str | None:
    """Why virtual Pis cannot run here, or None if they can."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    if not Path(SSHD).is_file():
        return f"needs {SSHD} (apt-get install openssh-server)"
    if shutil.which("ip") is None or shutil.which("ssh-keygen") is None:
        return "needs iproute2 and ssh-keygen"
    missing = [t for t in ("sudo", "visudo", "useradd", "userdel") if shutil.which(t) is None]
    if missing:
        return f"needs {', '.join(missing)} (apt-get install sudo passwd): the Pis are reached as a user with sudo"
    return None


def namespaces() -> list[str]:
    out = sh("ip", "netns", "list", check=False).stdout
    return [ln.split()[0] for ln in out.splitlines() if ln.strip()]


def ns_pids(ns: str) -> list[int]:
    out = sh("ip", "netns", "pids", ns, check=False).stdout
    return [int(p) for p in out.split() if p.isdigit()]


def _pick_mgmt_octet() -> int:
    """A third octet k with 10.99.k.0/24 used by no route or address of the root namespace."""
    used = sh("ip", "-4", "-o", "addr", "show").stdout + sh("ip", "-4", "route", "show", "table", "all").stdout
    nets = []
    for word in used.split():
        try:
            nets.append(ipaddress.ip_network(word, strict=False))
        except ValueError:
            continue
    for _ in range(200):
        k = random.randint(1, 254)
        cand = ipaddress.ip_network(f"10.99.{k}.0/24")
        if not any(cand.overlaps(n) for n in nets if n.prefixlen > 0):
            return k
    raise RuntimeError("no free 10.99.k.0/24 for the management links")


@dataclass
class Pi:
    node: str
    index: int
    ns: str
    mgmt_ip: str
    root_ip: str
    root_dev: str
    mesh_ip: str
    dir: Path

    @property
    def sshd_pidfile(self) -> Path:
        return self.dir / "sshd.pid"


class VirtualPiLab:
    """Start and stop a set of virtual Pis (see the module docstring)."""

    def __init__(self, workdir: Path, nodes: tuple[str, ...] = ("A", "B", "C", "D"), mesh: str = "bridge",
                 iface: str = "mesh0", extra_path: str | None = None, sudo_user: bool = True) -> None:
        self.workdir = Path(workdir)
        self.id = f"{random.getrandbits(16):04x}"
        self.user = f"aspv{self.id}" if sudo_user else "root"
        self.home = Path(f"/tmp/aspv-{self.id}-home") if sudo_user else None
        self.sudoers = Path(f"/etc/sudoers.d/aspv{self.id}") if sudo_user else None
        self.made_user = False
        self.nodes = nodes
        self.mesh = mesh            # bridge: one broadcast domain; dummy: a dummy interface per Pi
        self.iface = iface
        self.extra_path = extra_path
        self.air = f"aspv-{self.id}-air"
        self.key = self.workdir / "id_ed25519"
        self.pis: dict[str, Pi] = {}
        self.added_unreachable = False
        self.killed: list[str] = []   # processes stop() had to kill besides the sshds
        self.stand_in = "dummy"       # mesh="dummy": the interface type used (veth without the dummy driver)

    # ---- start ---------------------------------------------------------------
    def start(self) -> "VirtualPiLab":
        self.workdir.mkdir(parents=True, exist_ok=True)
        # sshd's privilege separation directory; left in place (openssh-server expects it)
        Path("/run/sshd").mkdir(mode=0o755, parents=True, exist_ok=True)
        if not self.key.exists():
            sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"aspv-{self.id}", "-f", str(self.key))
        (self.workdir / "authorized_keys").write_text(Path(f"{self.key}.pub").read_text())
        if self.home is not None:
            self._make_user()
        k = _pick_mgmt_octet()
        if self.mesh == "bridge":
            sh("ip", "netns", "add", self.air)
            sh("ip", "-n", self.air, "link", "add", "br0", "type", "bridge")
            sh("ip", "-n", self.air, "link", "set", "br0", "up")
        for i, node in enumerate(self.nodes):
            pi = Pi(node, i, f"aspv-{self.id}-{node}", f"10.99.{k}.{4 * i + 2}", f"10.99.{k}.{4 * i + 1}",
                    f"aspv{self.id}m{i}", f"{MESH_NET}.{i + 1}", self.workdir / node)
            self.pis[node] = pi
            self._start_pi(pi)
        r = sh("ip", "-4", "route", "show", UNREACHABLE)
        if "unreachable" not in r.stdout:
            sh("ip", "route", "add", "unreachable", UNREACHABLE)
            self.added_unreachable = True
        for pi in self.pis.values():
            self._wait_ssh(pi)
        return self

    def _start_pi(self, pi: Pi) -> None:
        pi.dir.mkdir(parents=True, exist_ok=True)
        sh("ip", "netns", "add", pi.ns)
        sh("ip", "-n", pi.ns, "link", "set", "lo", "up")
        sh("ip", "link", "add", pi.root_dev, "type", "veth", "peer", "name", "mgmt0", "netns", pi.ns)
        sh("ip", "addr", "add", f"{pi.root_ip}/30", "dev", pi.root_dev)
        sh("ip", "link", "set", pi.root_dev, "up")
        sh("ip", "-n", pi.ns, "addr", "add", f"{pi.mgmt_ip}/30", "dev", "mgmt0")
        sh("ip", "-n", pi.ns, "link", "set", "mgmt0", "up")
        if self.mesh == "bridge":
            port = f"p{pi.index}"
            sh("ip", "-n", self.air, "link", "add", port, "type", "veth", "peer", "name", self.iface, "netns", pi.ns)
            sh("ip", "-n", self.air, "link", "set", port, "master", "br0", "up")
            sh("ip", "-n", pi.ns, "addr", "add", f"{pi.mesh_ip}/24", "dev", self.iface)
            sh("ip", "-n", pi.ns, "link", "set", self.iface, "up")
        else:  # an interface without WiFi, left unconfigured for `aspan deploy mesh`
            if sh("ip", "-n", pi.ns, "link", "add", self.iface, "type", "dummy", check=False).returncode != 0:
                # kernels without the dummy driver: a veth whose peer stays in the namespace
                self.stand_in = "veth"
                sh("ip", "-n", pi.ns, "link", "add", self.iface, "type", "veth", "peer", "name", "peer0")
                sh("ip", "-n", pi.ns, "link", "set", "peer0", "up")
        self._start_sshd(pi)

    def _make_user(self) -> None:
        """The login user: no password (``*``: not locked, which sshd without PAM would refuse), key only,
        passwordless sudo; with ``extra_path``, sudo's secure_path starts with it (the fake ``iw``)."""
        assert self.home is not None and self.sudoers is not None
        if sh("getent", "passwd", self.user, check=False).returncode == 0:
            raise RuntimeError(f"user {self.user} exists already: not ours, not touched")
        sh("useradd", "--create-home", "--home-dir", str(self.home), "--shell", "/bin/bash", "--password", "*",
           "--comment", f"aspan virtual Pi lab {self.id}", self.user)
        self.made_user = True
        ssh_dir = self.home / ".ssh"
        ssh_dir.mkdir(mode=0o700)
        (ssh_dir / "authorized_keys").write_text(Path(f"{self.key}.pub").read_text())
        sh("chown", "-R", f"{self.user}:{self.user}", str(ssh_dir))
        rules = [f"{self.user} ALL=(ALL) NOPASSWD: ALL"]
        if self.extra_path:
            rules.insert(0, f'Defaults:{self.user} secure_path="{self.extra_path}:{DEFAULT_PATH}"')
        tmp = self.workdir / "sudoers"
        tmp.write_text("\n".join(rules) + "\n")
        sh("visudo", "-c", "-q", "-f", str(tmp))       # a broken drop-in would break sudo for everyone
        tmp.chmod(0o440)
        shutil.copy2(tmp, self.sudoers)

    @property
    def install_root(self) -> Path:
        """Where the inventory puts each Pi's install_dir (``<root>/<node>``): writable by the login user."""
        return (self.home if self.home is not None else self.workdir) / "install"

    def _sshd_config(self, pi: Pi) -> Path:
        hostkey = pi.dir / "ssh_host_ed25519_key"
        if not hostkey.exists():
            sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(hostkey))
        # sshd reads the user's keys as the user: from its home, not from the root-only workdir
        keys = "%h/.ssh/authorized_keys" if self.home is not None else str(self.workdir / "authorized_keys")
        lines = [f"ListenAddress {pi.mgmt_ip}", "Port 22", f"HostKey {hostkey}", f"PidFile {pi.sshd_pidfile}",
                 f"PermitRootLogin {'no' if self.home is not None else 'prohibit-password'}", "PubkeyAuthentication yes",
                 f"AuthorizedKeysFile {keys}", "PasswordAuthentication no",
                 "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no", "UseDNS no",
                 "Subsystem sftp internal-sftp", "MaxStartups 100:30:200", "MaxSessions 100",
                 "PrintMotd no", "LogLevel ERROR"]
        if self.extra_path:
            lines.append(f"SetEnv PATH={self.extra_path}:{DEFAULT_PATH}")
        cfg = pi.dir / "sshd_config"
        cfg.write_text("\n".join(lines) + "\n")
        return cfg

    def _start_sshd(self, pi: Pi) -> None:
        cfg = self._sshd_config(pi)
        pi.sshd_pidfile.unlink(missing_ok=True)
        sh("ip", "netns", "exec", pi.ns, SSHD, "-f", str(cfg), "-E", str(pi.dir / "sshd.log"))

    def _wait_ssh(self, pi: Pi, timeout: float = 15.0) -> None:
        end = time.time() + timeout
        while time.time() < end:
            try:
                with socket.create_connection((pi.mgmt_ip, 22), timeout=1.0) as s:
                    if s.recv(4).startswith(b"SSH"):
                        return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"sshd of {pi.ns} not reachable on {pi.mgmt_ip}:22: "
                           f"{(pi.dir / 'sshd.log').read_text() if (pi.dir / 'sshd.log').exists() else ''}")

    # ---- faults ----------------------------------------------------------------
    def stop_sshd(self, node: str) -> None:
        pi = self.pis[node]
        _kill_pidfile(pi.sshd_pidfile)

    def start_sshd(self, node: str) -> None:
        self._start_sshd(self.pis[node])
        self._wait_ssh(self.pis[node])

    # ---- inventory ---------------------------------------------------------------
    def inventory(self, path: Path, install_root: Path | None = None, **defaults: Any) -> Path:
        """Write an inventory of these Pis (the lab's login user, host key checking off) and return its path.
        ``install_root`` defaults to :attr:`install_root`."""
        install_root = install_root or self.install_root
        doc = {
            "defaults": {"user": self.user, "key_file": str(self.key), "iface": self.iface,
                         "strict_host_keys": False, "connect_timeout_s": 5,
                         "radio": False,             # a veth or dummy: the doctor's radio checks skip
                         **defaults},
            "mesh": {"ssid": "aspv-mesh", "channel": 1},
            "start_margin_s": 3,
            "poll_interval_s": 0.5,
            "hosts": [{"name": f"vpi-{p.node.lower()}", "node": p.node, "host": p.mgmt_ip,
                       "mesh_address": p.mesh_ip, "install_dir": str(install_root / p.node)}
                      for p in self.pis.values()],
        }
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path

    # ---- stop ------------------------------------------------------------------
    def stop(self) -> None:
        """Stop every sshd and any other process in the namespaces, delete namespaces and veths."""
        for pi in self.pis.values():
            _kill_pidfile(pi.sshd_pidfile)
        spaces = [p.ns for p in self.pis.values()] + ([self.air] if self.mesh == "bridge" else [])
        # sshd's session processes end with it, but not at once: give what is already exiting up to
        # 2 s, so that only a process that would stay (a node daemon, a stray session) counts as left.
        end = time.time() + 2.0
        while time.time() < end and any(_running(pid) for ns in spaces if ns in namespaces() for pid in ns_pids(ns)):
            time.sleep(0.05)
        for ns in spaces:
            if ns not in namespaces():
                continue
            for pid in ns_pids(ns):
                if _running(pid):
                    self.killed.append(f"{ns}: pid {pid}: {_cmdline(pid)}")
                    _kill(pid)
            sh("ip", "netns", "del", ns, check=False)
        for pi in self.pis.values():
            if sh("ip", "link", "show", pi.root_dev, check=False).returncode == 0:
                sh("ip", "link", "del", pi.root_dev, check=False)
        if self.added_unreachable and not any(n.startswith(("aspn-", "aspv-")) for n in namespaces()):
            sh("ip", "route", "del", "unreachable", UNREACHABLE, check=False)
        if self.sudoers is not None:
            self.sudoers.unlink(missing_ok=True)
        if self.made_user:
            # removes its home too: the install directories, with the files root wrote there through sudo
            r = sh("userdel", "--remove", self.user, check=False)
            if r.returncode != 0:
                raise RuntimeError(f"userdel --remove {self.user} failed ({r.returncode}): {r.stderr.strip()}")
            self.made_user = False

    def leftovers(self) -> list[str]:
        """Namespaces, root links, processes, the user, its home or its sudoers drop-in if they still exist."""
        left = [n for n in namespaces() if n.startswith(f"aspv-{self.id}-")]
        if self.home is not None:
            if sh("getent", "passwd", self.user, check=False).returncode == 0:
                left.append(f"user {self.user}")
            left += [str(p) for p in (self.home, self.sudoers) if p is not None and p.exists()]
        links = sh("ip", "-o", "link", "show", check=False).stdout
        left += [ln.split(":")[1].strip() for ln in links.splitlines() if f"aspv{self.id}" in ln]
        for pi in self.pis.values():
            if pi.sshd_pidfile.exists():
                try:
                    pid = int(pi.sshd_pidfile.read_text())
                    if _alive(pid):
                        left.append(f"sshd {pid}")
                except ValueError:
                    continue
        return left


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _running(pid: int) -> bool:
    """Alive and not already exiting: a zombie (an sshd session that just ended) is not running, nor is a
    process whose memory the kernel has already released on its way out (empty command line)."""
    return _alive(pid) and _cmdline(pid) not in ("", "?")


def _kill(pid: int, grace: float = 3.0) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    end = time.time() + grace
    while time.time() < end and _alive(pid):
        time.sleep(0.05)
    if _alive(pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return


def _kill_pidfile(path: Path) -> None:
    try:
        pid = int(path.read_text().strip())
    except (OSError, ValueError):
        return
    _kill(pid)
    path.unlink(missing_ok=True)
