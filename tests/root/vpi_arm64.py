"""Virtual Raspberry Pis that are arm64 Raspberry Pi OS Bookworm: their own root, users, Python and sshd.

Raspberry Pi OS Bookworm (64-bit) is Debian bookworm on aarch64: Python 3.11.2, glibc 2.36, pip
refusing system installs (PEP 668), iptables on the nft backend.  Each Pi here runs from such a root:

- **The base root**, built once per machine with ``debootstrap --arch=arm64 --variant=minbase`` from the
  Debian mirror this machine's apt uses (:func:`apt_mirror`) and cached in :data:`CACHE` (a key over the
  suite, the package list and the mirror names the directory).  It holds the login user ``pi`` (key
  only, passwordless sudo, as Raspberry Pi OS Lite sets it up) and no SSH host keys.
- **Each Pi** is an overlay of that base (``<workdir>/<node>/root``): what a Pi writes (its venv, its
  host key, its logs) stays in its own upper directory and goes with :meth:`Arm64PiLab.stop`.
- Its programs run under ``qemu-user-static`` through ``binfmt_misc``; its sshd is the root's own,
  started by ``chroot`` inside the Pi's network namespace (with /proc, /sys and /dev mounted in the
  private mount namespace of ``ip netns exec``, so they go when the Pi's last process ends).  sudo is
  setuid: the aarch64 entry of binfmt_misc needs the ``C`` flag (credentials from the binary, not from
  the interpreter); :func:`qemu_ready` registers it so when it is absent and says so.

The network is the x86 lab's (tests/root/vpi.py): a namespace per Pi, a management veth with the sshd,
``mesh0`` in one bridge.  What qemu-user cannot do a Pi does is probed, not assumed
(:func:`netfilter_refused`): it translates no ``NETLINK_NETFILTER`` socket and no iptables
``getsockopt``, so neither iptables (nft or legacy) nor NFQUEUE run inside these Pis.
"""
from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any
import yaml
from tests.root.vpi import Pi, VirtualPiLab, sh


CACHE = Path("/var/cache/aspan/vpi-arm64")


SUITE = "bookworm"


PACKAGES = ("python3", "python3-venv", "python3-dev", "gcc", "libc6-dev", "libnetfilter-queue-dev",
            "openssh-server", "sudo", "iproute2", "iptables", "ethtool", "iw", "procps", "kmod")


USER = "pi"


BINFMT = Path("/proc/sys/fs/binfmt_misc")


QEMU = "/usr/libexec/qemu-binfmt/aarch64-binfmt-P"


# the aarch64 ELF magic and mask of Debian's qemu-user-static (/usr/share/binfmts/qemu-aarch64)
_MAGIC = r"\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00"


_MASK = r"\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff"


BUILD_TIMEOUT_S = 1800.0


def apt_mirror() -> str:
    """The Debian mirror of this machine's apt sources (deb822 or one-line format)."""
    for path in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        block: dict[str, str] = {}
        for line in path.read_text().splitlines() + [""]:
            if not line.strip():
                if "debian" in block.get("URIs", "") and SUITE in block.get("Suites", "").split() \
                        and "security" not in block.get("URIs", ""):
                    return block["URIs"].split()[0]
                block = {}
            elif ":" in line and not line.startswith("#"):
                k, v = line.split(":", 1)
                block[k.strip()] = v.strip()
    legacy = Path("/etc/apt/sources.list")
    if legacy.exists():
        for line in legacy.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[0] == "deb" and SUITE in parts and "security" not in parts[1]:
                return parts[1]
    raise RuntimeError("no Debian bookworm mirror in /etc/apt/sources.list(.d): debootstrap needs one")


def unavailable() -> str | None:
    """Why arm64 Pis cannot run here (and what to install), or None."""
    missing = [pkg for tool, pkg in (("/usr/sbin/debootstrap", "debootstrap"), (QEMU, "qemu-user-static"))
               if not Path(tool).exists()]
    if missing:
        return f"needs {' and '.join(missing)} (apt-get install {' '.join(missing)})"
    return qemu_ready()


def qemu_ready() -> str | None:
    """Make sure aarch64 binaries run through qemu with their own credentials (sudo); None when they do."""
    if not (BINFMT / "register").exists():
        r = sh("mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT), check=False)
        if r.returncode != 0:
            return f"binfmt_misc is not mounted and cannot be: {r.stderr.strip()}"
    entry = BINFMT / "qemu-aarch64"
    flags = ""
    if entry.exists():
        text = entry.read_text()
        flags = next((ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("flags:")), "")
        if "enabled" in text.splitlines()[0] and "C" in flags and "F" in flags:
            return None
        entry.write_text("-1")                        # re-registered below with the credentials flag
    (BINFMT / "register").write_text(f":qemu-aarch64:M:0:{_MAGIC}:{_MASK}:{QEMU}:POCF")
    print(f"vpi_arm64: binfmt_misc's qemu-aarch64 entry re-registered with flags POCF (was {flags or 'absent'})")
    return None


def _key() -> str:
    return hashlib.sha256(f"{SUITE}|{','.join(PACKAGES)}|{apt_mirror()}|user={USER}".encode()).hexdigest()[:12]


def base_root(say=print) -> Path:
    """The cached arm64 bookworm root, built on first use (about 5-8 minutes); concurrent callers wait."""
    home = CACHE / f"{SUITE}-{_key()}"
    root = home / "root"
    home.mkdir(parents=True, exist_ok=True)
    with open(home / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (home / "complete").exists():
            return root
        tmp = home / "root.tmp"
        if tmp.exists():
            shutil.rmtree(tmp)
        t0 = time.monotonic()
        say(f"vpi_arm64: building the arm64 {SUITE} root in {root} (debootstrap, once per machine)")
        r = subprocess.run(["debootstrap", "--arch=arm64", "--variant=minbase", f"--include={','.join(PACKAGES)}",
                            SUITE, str(tmp), apt_mirror()], capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        if r.returncode != 0:
            raise RuntimeError(f"debootstrap failed ({r.returncode}): {(r.stdout + r.stderr)[-2000:]}")
        # the Raspberry Pi OS Lite login: a user with passwordless sudo ('*': no password, not locked)
        sh("chroot", str(tmp), "useradd", "--create-home", "--shell", "/bin/bash", "--password", "*", USER)
        sudoers = tmp / "etc/sudoers.d" / f"010_{USER}-nopasswd"
        sudoers.write_text(f"{USER} ALL=(ALL) NOPASSWD: ALL\n")
        sudoers.chmod(0o440)
        for key in (tmp / "etc/ssh").glob("ssh_host_*"):
            key.unlink()                           # each Pi gets its own
        (tmp / "run/sshd").mkdir(parents=True, exist_ok=True)
        if root.exists():
            shutil.rmtree(root)
        tmp.rename(root)
        (home / "complete").write_text(f"built in {time.monotonic() - t0:.0f} s\n")
        say(f"vpi_arm64: root built in {time.monotonic() - t0:.0f} s")
        return root


class Arm64PiLab(VirtualPiLab):
    """The lab of tests/root/vpi.py whose Pis run from their own arm64 Raspberry Pi OS root (see the module)."""

    def __init__(self, workdir: Path, nodes: tuple[str, ...] = ("A", "B", "C", "D"), **kw: Any) -> None:
        super().__init__(workdir, nodes, sudo_user=False, **kw)
        self.user = USER
        self.base: Path | None = None
        self.roots: dict[str, Path] = {}

    def start(self) -> "Arm64PiLab":
        why = unavailable()
        if why is not None:
            raise RuntimeError(f"arm64 virtual Pis: {why}")
        self.base = base_root()
        super().start()
        return self

    def root_of(self, node: str) -> Path:
        return self.roots[node]

    def _start_pi(self, pi: Pi) -> None:
        assert self.base is not None
        top = self.workdir / pi.node
        for d in ("upper", "work", "root"):
            (top / d).mkdir(parents=True, exist_ok=True)
        root = top / "root"
        sh("mount", "-t", "overlay", "overlay", "-o",
           f"lowerdir={self.base},upperdir={top / 'upper'},workdir={top / 'work'}", str(root))
        self.roots[pi.node] = root
        ssh = root / "home" / USER / ".ssh"
        ssh.mkdir(mode=0o700, parents=True, exist_ok=True)
        (ssh / "authorized_keys").write_text(Path(f"{self.key}.pub").read_text())
        sh("chroot", str(root), "chown", "-R", f"{USER}:{USER}", f"/home/{USER}/.ssh")
        pi.dir = root / "var/lib/aspv"               # the same file at /var/lib/aspv inside the Pi
        (root / "etc/hostname").write_text(f"vpi-{pi.node.lower()}\n")
        super()._start_pi(pi)

    def _sshd_config(self, pi: Pi) -> Path:
        hostkey = pi.dir / "ssh_host_ed25519_key"
        if not hostkey.exists():
            sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(hostkey))
        inside = "/var/lib/aspv"
        lines = [f"ListenAddress {pi.mgmt_ip}", "Port 22", f"HostKey {inside}/ssh_host_ed25519_key",
                 f"PidFile {inside}/sshd.pid", "PermitRootLogin no", "PubkeyAuthentication yes",
                 "AuthorizedKeysFile %h/.ssh/authorized_keys", "PasswordAuthentication no",
                 "KbdInteractiveAuthentication no", "UsePAM no", "UseDNS no", "Subsystem sftp internal-sftp",
                 "MaxStartups 100:30:200", "MaxSessions 100", "PrintMotd no", "LogLevel ERROR"]
        cfg = pi.dir / "sshd_config"
        cfg.write_text("\n".join(lines) + "\n")
        return cfg

    def _start_sshd(self, pi: Pi) -> None:
        self._sshd_config(pi)
        pi.sshd_pidfile.unlink(missing_ok=True)
        root = str(self.roots[pi.node])
        # mounts made here live in ip netns exec's own mount namespace, and go with the Pi's last process
        script = (f"mount -t proc proc {root}/proc && mount -t sysfs sysfs {root}/sys && "
                  f"mount --rbind /dev {root}/dev && "
                  f"exec chroot {root} /usr/sbin/sshd -f /var/lib/aspv/sshd_config -E /var/lib/aspv/sshd.log")
        sh("ip", "netns", "exec", pi.ns, "sh", "-c", script)

    def _wait_ssh(self, pi: Pi, timeout: float = 60.0) -> None:
        super()._wait_ssh(pi, timeout)               # an emulated sshd takes longer to listen

    @property
    def install_root(self) -> Path:
        return Path(f"/home/{USER}/aspan")

    def inventory(self, path: Path, install_root: Path | None = None, **defaults: Any) -> Path:
        """As the x86 lab's, with the Pis' own Python and ``graph_filter: none``: iptables cannot run under
        qemu-user (:func:`netfilter_refused`), and one bridge of unicast veths needs no MAC filter for a
        chain's static routes (a datagram goes to its next hop's address only)."""
        defaults.setdefault("connect_timeout_s", 20)
        super().inventory(path, install_root, python="/usr/bin/python3", **defaults)
        doc = yaml.safe_load(path.read_text())
        doc["graph_filter"] = "none"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path

    def run_in(self, node: str, command: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """A command inside the Pi (its namespace and root), as root."""
        pi = self.pis[node]
        return subprocess.run(["ip", "netns", "exec", pi.ns, "chroot", str(self.roots[node]), "sh", "-c", command],
                              capture_output=True, text=True, timeout=timeout)

    def stop(self) -> None:
        try:
            super().stop()
        finally:
            for node, root in list(self.roots.items()):
                if sh("mountpoint", "-q", str(root), check=False).returncode == 0:
                    sh("umount", str(root), check=False)
                if sh("mountpoint", "-q", str(root), check=False).returncode != 0:
                    shutil.rmtree(root.parent, ignore_errors=True)
                    del self.roots[node]

    def leftovers(self) -> list[str]:
        left = super().leftovers()
        mounts = Path("/proc/self/mounts").read_text()
        left += [f"mount {ln.split()[1]}" for ln in mounts.splitlines() if str(self.workdir) in ln]
        return left


def netfilter_refused(lab: Arm64PiLab, node: str) -> str | None:
    """Why iptables and NFQUEUE cannot run inside this Pi (qemu-user's netlink), or None if they can."""
    r = lab.run_in(node, "python3 -c 'import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12)' 2>&1; "
                         "iptables -S 2>&1 | head -1")
    out = r.stdout.strip()
    if "Protocol not supported" in out:
        return ("qemu-user translates no NETLINK_NETFILTER socket (errno 93) and no iptables getsockopt: "
                f"iptables and NFQUEUE cannot run on an emulated Pi ({out.splitlines()[-1]})")
    return None
