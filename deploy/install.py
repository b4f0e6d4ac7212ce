"""``aspan deploy setup``: install the project on every host, offline.

1. Build the project wheel locally (``pip wheel``), or take ``--wheel FILE``.
2. Probe every host: Python version, CPU, glibc, and the system tools each task needs
   (:data:`SYSTEM_PACKAGES`); a host missing what setup or run needs fails with the
   Debian package to install.
3. Download the dependency wheels for each host platform once, locally
   (``pip download --only-binary=:all: --platform ...``), into a wheelhouse cached
   between runs: the Pis need no internet.
4. Upload the wheels that the host lacks (SFTP) into ``<install_dir>/wheels``, create the
   venv ``<install_dir>/venv`` and ``pip install --no-index`` from those wheels.
"""
from __future__ import annotations

import hashlib
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable

from deploy.hosts import GroupException, HostError, Remote, by_name, on_hosts
from deploy.inventory import Host

PROJECT = "aspan-testbed"
VERSION_PY = f'import importlib.metadata as m; print(m.version("{PROJECT}"))'
MIN_PYTHON = (3, 11)
INSTALL_TIMEOUT_S = 1800.0   # pip installing numpy, pandas, matplotlib on a Pi 3 takes minutes


@dataclass(frozen=True)
class SystemPackage:
    tool: str          # what is checked on the host
    package: str       # the Debian / Raspberry Pi OS package providing it
    needed_by: tuple[str, ...]


SYSTEM_PACKAGES: tuple[SystemPackage, ...] = (
    SystemPackage("python3 >= 3.11", "python3", ("setup", "run")),
    SystemPackage("python3 -m venv (ensurepip)", "python3-venv", ("setup",)),
    SystemPackage("nohup", "coreutils", ("run",)),
    SystemPackage("setsid", "util-linux", ("run",)),
    SystemPackage("ip", "iproute2", ("mesh", "routes")),
    SystemPackage("iw", "iw", ("mesh",)),
    SystemPackage("sysctl", "procps", ("routes",)),
    SystemPackage("sudo", "sudo", ("run: the MAC filter", "mesh", "routes (when the ssh user is not root)")),
    SystemPackage("iptables", "iptables", ("run: the MAC filter, the kernel data plane",)),
    SystemPackage("ethtool", "ethtool", ("run, kernel data plane",)),
    SystemPackage("libnetfilter_queue.h", "libnetfilter-queue-dev", ("setup: building netfilterqueue",)),
    SystemPackage("Python.h", "python3-dev", ("setup: building netfilterqueue",)),
    SystemPackage("cc", "gcc", ("setup: building netfilterqueue",)),
    SystemPackage("iperf3", "iperf3", ("run, kernel data plane with netns.traffic: iperf3",)),
)
# what the kernel data plane (pi.data_plane: kernel) needs on every host; iperf3 only for traffic: iperf3
KERNEL_PACKAGES = ("iptables", "ethtool", "libnetfilter-queue-dev", "python3-dev", "gcc")
KERNEL_APT_LINE = "sudo apt-get install " + " ".join(KERNEL_PACKAGES) + " iperf3"
NFQ_PACKAGE = "netfilterqueue"
# netfilterqueue's build requirements, uploaded for offline builds (its setup.py asks for cython too)
BUILD_WHEELS = ("setuptools>=68", "wheel", "cython")
# pip reads an sdist's metadata by building it in an isolated environment, which gets the same format
# options: with --no-binary=:all: that environment's Cython (asked for by netfilterqueue's egg_info)
# is compiled from source, 10-15 minutes on a machine whose pip cache holds no built Cython wheel.
# So only netfilterqueue itself comes as source; everything else pip fetches, the build
# environment included, must be a wheel (pip's rule: a name listed in --no-binary beats :all:).
SDIST_ONLY_NFQ = ("--only-binary=:all:", f"--no-binary={NFQ_PACKAGE}")

_PROBE_PY = ("import json, platform, sys\n"
             "try:\n    import venv, ensurepip\n    v = True\nexcept ImportError:\n    v = False\n"
             "import os, sysconfig\n"
             "h = {'Python.h': os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')),"
             " 'libnetfilter_queue.h': os.path.exists('/usr/include/libnetfilter_queue/libnetfilter_queue.h')}\n"
             "print(json.dumps({'python': list(sys.version_info[:3]), 'impl': sys.implementation.name,"
             " 'machine': platform.machine(), 'libc': list(platform.libc_ver()), 'venv': v, 'headers': h}))")
SBIN_PATH = "/usr/local/sbin:/usr/sbin:/sbin"
TOOLS = ("nohup", "setsid", "ip", "iw", "sysctl", "sudo", "iptables", "ethtool", "cc", "iperf3")


def probe_command(python: str) -> str:
    """Prints one JSON line about the host's Python (or ``{"python": null}``), then ``tool NAME yes|no``."""
    q = shlex.quote
    tools = " ".join(TOOLS)
    # a user's PATH has no sbin directories (Debian: /usr/local/bin:/usr/bin:/bin), where iptables, ethtool,
    # sysctl and iw live: they run through sudo, whose secure_path has them, so look there too
    return (f"if command -v {q(python)} >/dev/null 2>&1; then {q(python)} -c {q(_PROBE_PY)}; "
            f"else echo '{{\"python\": null}}'; fi; "
            f"for t in {tools}; do if PATH=\"$PATH:{SBIN_PATH}\" command -v $t >/dev/null 2>&1; then "
            f"echo \"tool $t yes\"; else echo \"tool $t no\"; fi; done")


@dataclass
class HostFacts:
    """What the probe found on one host."""

    python: tuple[int, ...] | None
    machine: str = ""
    libc: tuple[str, str] = ("", "")
    venv: bool = False
    tools: dict[str, bool] = field(default_factory=dict)
    headers: dict[str, bool] = field(default_factory=dict)

    @classmethod
    def parse(cls, out: str) -> "HostFacts":
        lines = out.strip().splitlines()
        try:
            info = json.loads(lines[0]) if lines else {}
        except ValueError:
            raise HostError(f"cannot read the probe output: {lines[0]!r}") from None
        tools = {}
        for ln in lines[1:]:
            parts = ln.split()
            if len(parts) == 3 and parts[0] == "tool":
                tools[parts[1]] = parts[2] == "yes"
        py = tuple(info["python"]) if info.get("python") else None
        libc = tuple(info.get("libc") or ("", ""))
        return cls(py, info.get("machine", ""), (str(libc[0]), str(libc[1])), bool(info.get("venv")), tools,
                   {k: bool(v) for k, v in (info.get("headers") or {}).items()})

    def platform_key(self) -> str:
        """Names the wheel set this host needs, e.g. ``cp311-x86_64-glibc2.36``."""
        assert self.python is not None
        return f"cp{self.python[0]}{self.python[1]}-{self.machine}-{self.libc[0]}{self.libc[1]}"

    def check(self, host: Host) -> tuple[list[str], list[str]]:
        """(missing for setup/run -> the host fails, missing for other tasks -> warnings)."""
        errors: list[str] = []
        warnings: list[str] = []
        if self.python is None:
            errors.append(f"{host.python} not found: apt-get install python3 (>= 3.11)")
        elif self.python[:2] < MIN_PYTHON:
            errors.append(f"{host.python} is {'.'.join(map(str, self.python))}, need >= 3.11 "
                          "(Raspberry Pi OS 12 'bookworm' has 3.11)")
        elif not self.venv:
            errors.append(f"{host.python} cannot create a venv: apt-get install python3-venv")
        for tool, pkg, needed_for_run in (("nohup", "coreutils", True), ("setsid", "util-linux", True),
                                          ("ip", "iproute2", False), ("iw", "iw", False),
                                          ("sysctl", "procps", False)):
            if not self.tools.get(tool, False):
                (errors if needed_for_run else warnings).append(
                    f"{tool} missing (apt-get install {pkg}; needed by "
                    f"{', '.join(next(p.needed_by for p in SYSTEM_PACKAGES if p.tool == tool))})")
        if host.sudo and not self.tools.get("sudo", False):
            warnings.append("sudo missing (apt-get install sudo; run's MAC filter, mesh and routes need root)")
        if not self.tools.get("iptables", False):
            warnings.append("iptables missing (apt-get install iptables; needed by run: the MAC filter that "
                            "enforces the experiment's graph)")
        return errors, warnings

    def kernel_missing(self) -> list[str]:
        """What the kernel data plane lacks on this host, as Debian packages (empty: it can run)."""
        missing = []
        for name, pkg in (("iptables", "iptables"), ("ethtool", "ethtool")):
            if not self.tools.get(name, False):
                missing.append(pkg)
        if not self.headers.get("libnetfilter_queue.h", False):
            missing.append("libnetfilter-queue-dev")
        if not self.headers.get("Python.h", False):
            missing.append("python3-dev")
        if not self.tools.get("cc", False):
            missing.append("gcc")
        return missing

    def describe(self) -> str:
        if self.python is None:
            return "no python"
        return f"python {'.'.join(map(str, self.python))} ({self.machine}, {self.libc[0]} {self.libc[1]})"


def pip_platform_args(facts: HostFacts) -> list[str]:
    """``pip download`` arguments selecting binary wheels that run on the host."""
    assert facts.python is not None
    major, minor = facts.python[:2]
    arch = facts.machine
    args = ["--only-binary=:all:", "--python-version", f"{major}.{minor}", "--implementation", "cp",
            "--abi", f"cp{major}{minor}", "--abi", "abi3", "--abi", "none"]
    platforms = []
    if facts.libc[0] == "glibc" and facts.libc[1].count(".") == 1:
        gmaj, gmin = (int(x) for x in facts.libc[1].split("."))
        platforms += [f"manylinux_{gmaj}_{m}_{arch}" for m in range(gmin, 16, -1)]
        platforms.append(f"manylinux2014_{arch}")
        if arch in ("x86_64", "i686"):
            platforms += [f"manylinux2010_{arch}", f"manylinux1_{arch}"]
    platforms.append(f"linux_{arch}")
    for p in platforms:
        args += ["--platform", p]
    return args


def source_root() -> Path | None:
    """The project's source tree (with pyproject.toml) this code runs from, if any."""
    root = Path(__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() else None


def _local(cmd: list[str], say: Callable[[str], None], dry_run: bool) -> None:
    say(f"[local] run: {' '.join(shlex.quote(c) for c in cmd)}")
    if dry_run:
        return
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-15:])
        raise RuntimeError(f"local command failed (exit {r.returncode}): {' '.join(cmd)}\n{tail}")


# what a copy of the source tree for the wheel leaves out: setuptools' own build/ (whose build/lib keeps every
# module it ever copied, so a moved or deleted module would go on shipping), the venv, runs and caches
NOT_IN_WHEEL_SOURCE = (".git", ".venv", "build", "dist", "runs", "*.egg-info", "__pycache__", "mutants",
                       ".hypothesis", ".pytest_cache")


def build_wheel(out_dir: Path, say: Callable[[str], None], dry_run: bool = False) -> Path:
    """Build the project wheel into ``out_dir`` from a clean copy of the source tree.

    Building in the tree itself reuses its ``build/lib``, which setuptools fills and never empties: a
    module moved or deleted since an earlier build stays in every later wheel, and on the hosts.
    """
    root = source_root()
    if root is None:
        raise RuntimeError("no source tree (pyproject.toml) next to this installation: pass --wheel FILE")
    src = out_dir / "source"
    if not dry_run:
        shutil.copytree(root, src, ignore=shutil.ignore_patterns(*NOT_IN_WHEEL_SOURCE))
    _local([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
            "--wheel-dir", str(out_dir), str(src)], say, dry_run)
    if dry_run:
        return out_dir / "aspan_testbed-<version>-py3-none-any.whl"
    wheels = sorted(out_dir.glob("aspan_testbed-*.whl"))
    if not wheels:
        raise RuntimeError(f"pip wheel wrote no aspan_testbed wheel into {out_dir}")
    return wheels[-1]


def wheel_requirements(wheel: Path) -> list[str]:
    """The Requires-Dist lines of a wheel's METADATA."""
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode()
    return sorted(ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("Requires-Dist:"))


def download_wheels(project_wheel: Path, facts: HostFacts, wheelhouse: Path, say: Callable[[str], None],
                    dry_run: bool = False, extra_index_url: str | None = None) -> Path:
    """Dependency wheels for the host platform, downloaded once into ``wheelhouse/<platform>``."""
    key = facts.platform_key() if facts.python else "<platform>"
    dest = wheelhouse / key
    reqs = wheel_requirements(project_wheel) if not dry_run else []
    marker = dest / f".complete-{hashlib.sha256(json.dumps(reqs).encode()).hexdigest()[:16]}"
    if marker.exists():
        say(f"[local] using the cached wheels in {dest}")
        return dest
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
           "--dest", str(dest)]
    cmd += pip_platform_args(facts) if facts.python else ["<pip platform options of the host>"]
    if extra_index_url:
        cmd += ["--extra-index-url", extra_index_url]
    cmd.append(str(project_wheel))
    if not dry_run:
        dest.mkdir(parents=True, exist_ok=True)
    _local(cmd, say, dry_run)
    if not dry_run:
        (dest / project_wheel.name).unlink(missing_ok=True)  # pip download copies the project wheel too
        marker.write_text("\n".join(reqs) + "\n")
    return dest


def kernel_requirement(project_wheel: Path | None) -> str:
    """The netfilterqueue requirement of the project's ``kernel`` extra (without its marker)."""
    if project_wheel is not None and project_wheel.is_file():
        for req in wheel_requirements(project_wheel):
            if req.lower().startswith(NFQ_PACKAGE):
                return req.split(";")[0].strip()
    return f"{NFQ_PACKAGE}>=1.1"


def download_kernel_sources(project_wheel: Path, facts: HostFacts, dest: Path, say: Callable[[str], None],
                            dry_run: bool = False) -> None:
    """The netfilterqueue sdist (PyPI has no ARM wheels of it) and its build requirements, once, into ``dest``.

    The Pis build it offline from these files (``pip wheel --no-index``); the wheel one of them
    builds is copied back into ``dest`` and uploaded to the hosts of that platform from then on.
    """
    req = kernel_requirement(None if dry_run else project_wheel)
    marker = dest / f".complete-kernel-{hashlib.sha256(req.encode()).hexdigest()[:16]}"
    if marker.exists():
        return
    base = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--dest", str(dest)]
    _local(base + ["--no-deps", *SDIST_ONLY_NFQ, req], say, dry_run)
    plat = pip_platform_args(facts) if facts.python else ["--only-binary=:all:"]
    _local(base + plat + list(BUILD_WHEELS), say, dry_run)     # with their dependencies (wheel needs packaging)
    if not dry_run:
        marker.write_text(req + "\n")


def nfq_install_command(host: Host, req: str) -> str:
    """Builds (once) and installs netfilterqueue into the host's venv from the uploaded files; prints how.

    No format options: offline, the one sdist among the uploaded files is netfilterqueue's, so nothing
    else can be built from source, and a netfilterqueue wheel built on another host of the platform is
    taken as it is (``--no-binary=netfilterqueue`` here would build it again on every host).
    """
    q = shlex.quote
    wheels = q(str(PurePosixPath(host.install_dir) / "wheels"))
    py = f"{q(host.venv)}/bin/python"
    pip = f"{py} -m pip --disable-pip-version-check"
    return (f"if {py} -c 'import netfilterqueue' 2>/dev/null; then echo present; else "
            f"{pip} wheel --quiet --no-index --find-links {wheels} --wheel-dir {wheels} {q(req)} && "
            f"{pip} install --quiet --no-index --find-links {wheels} {q(req)} && "
            f"{py} -c 'import netfilterqueue' && echo installed; fi")


def fetch_built_wheel(remote: Remote, wheels_dir: str, local_dir: Path) -> str | None:
    """Copy a netfilterqueue wheel built on the host into the local wheelhouse (for the other hosts)."""
    for name in remote.listdir(wheels_dir):
        if name.lower().startswith(NFQ_PACKAGE) and name.endswith(".whl") and not (local_dir / name).exists():
            tmp = local_dir / f".{name}.{remote.name}.part"
            remote.get(f"{wheels_dir}/{name}", tmp)
            tmp.replace(local_dir / name)
            return name
    return None


def remote_wheels(remote: Remote, wheels_dir: str) -> dict[str, int]:
    """Name -> size of the wheels already on the host."""
    out = remote.run(f"mkdir -p {shlex.quote(wheels_dir)} && cd {shlex.quote(wheels_dir)} && "
                     "for f in *.whl *.tar.gz; do [ -f \"$f\" ] && stat -c '%n %s' \"$f\"; done; true").stdout
    have = {}
    for ln in out.splitlines():
        parts = ln.rsplit(" ", 1)
        if len(parts) == 2 and parts[1].isdigit():
            have[parts[0]] = int(parts[1])
    return have


def install_commands(host: Host, wheel_name: str) -> list[str]:
    """The commands that create the venv and install the project from the uploaded wheels."""
    q = shlex.quote
    wheels = str(PurePosixPath(host.install_dir) / "wheels")
    whl = f"{wheels}/{wheel_name}"
    pip = f"{q(host.venv)}/bin/python -m pip --disable-pip-version-check install --quiet --no-index --no-compile"
    return [
        f"mkdir -p {q(host.work_dir)}",
        f"test -x {q(host.venv)}/bin/python || {q(host.python)} -m venv {q(host.venv)}",
        f"{pip} --find-links {q(wheels)} {q(whl)}",
        f"{pip} --no-deps --force-reinstall {q(whl)}",
        f"{q(host.aspan)} --help > /dev/null && {q(host.venv)}/bin/python -c {q(VERSION_PY)}",
    ]


@dataclass
class SetupReport:
    facts: HostFacts
    warnings: list[str]
    uploaded: list[str]
    version: str
    kernel: str = ""          # netfilterqueue: present | installed | why not


def setup(remotes: list[Remote], wheelhouse: Path, say: Callable[[str], None], wheel: Path | None = None,
          extra_index_url: str | None = None) -> dict[str, SetupReport]:
    """Install the project on every host; returns host name -> report.  Raises GroupException per host."""
    dry_run = any(r.dry_run for r in remotes)
    with tempfile.TemporaryDirectory(prefix="aspan-wheel-") as tmp:
        project_wheel = wheel or build_wheel(Path(tmp), say, dry_run)
        if wheel is not None and not wheel.is_file():
            raise RuntimeError(f"--wheel {wheel}: no such file")

        def probe(r: Remote) -> HostFacts:
            out = r.run(probe_command(r.host.python)).stdout
            return HostFacts(None) if r.dry_run else HostFacts.parse(out)

        try:
            probed = on_hosts(remotes, probe)
        except GroupException as e:  # unreachable hosts fail below, the others go on
            probed = e.result
        facts: dict[str, HostFacts | Exception] = by_name(probed, remotes)
        for r in remotes:
            f = facts[r.name]
            if isinstance(f, HostFacts) and not dry_run:
                errors, _ = f.check(r.host)
                if errors:
                    facts[r.name] = HostError("missing system packages: " + "; ".join(errors))
        dirs: dict[str, Path] = {}
        for r in remotes:
            f = facts[r.name]
            if isinstance(f, HostFacts):
                key = f.platform_key() if f.python else "<platform>"
                if key not in dirs:
                    dirs[key] = download_wheels(project_wheel, f, wheelhouse, say, dry_run, extra_index_url)
                    download_kernel_sources(project_wheel, f, dirs[key], say, dry_run)

        build_locks = {str(d): threading.Lock() for d in dirs.values()}

        def install(r: Remote) -> SetupReport:
            f = facts[r.name]
            if not isinstance(f, HostFacts):
                raise f
            src = dirs[f.platform_key() if f.python else "<platform>"]
            wheels_dir = str(PurePosixPath(r.host.install_dir) / "wheels")
            have = {} if r.dry_run else remote_wheels(r, wheels_dir)
            if r.dry_run:
                r.run(f"mkdir -p {shlex.quote(wheels_dir)} && stat -c '%n %s' {shlex.quote(wheels_dir)}/*.whl")
            local = [project_wheel] + ([] if r.dry_run else sorted(src.glob("*.whl")) + sorted(src.glob("*.tar.gz")))
            if r.dry_run:
                r.say(f"put: {src}/*.whl -> {wheels_dir}/ (the wheels the host lacks)")
            uploaded = []
            for w in local:
                built_here = w.name.lower().startswith(NFQ_PACKAGE) and w.name.endswith(".whl") and w.name in have
                if w == project_wheel or (have.get(w.name) != w.stat().st_size and not built_here):
                    r.put(w, f"{wheels_dir}/{w.name}")
                    uploaded.append(w.name)
            out = ""
            for cmd in install_commands(r.host, project_wheel.name):
                out = r.run(cmd, timeout=INSTALL_TIMEOUT_S).stdout
            _, warnings = f.check(r.host) if f.python else ([], [])
            missing = [] if r.dry_run else f.kernel_missing()
            if missing:
                kernel = (f"not built: the kernel data plane needs {', '.join(missing)} "
                          f"({KERNEL_APT_LINE})")
            else:
                # one host of a platform builds netfilterqueue (minutes on a Pi 3, and four compilers at once
                # would share its cores); the others of that platform wait and get the wheel it built
                with build_locks[str(src)]:
                    if not r.dry_run:
                        for w in sorted(src.glob("*.whl")):
                            if w.name.lower().startswith(NFQ_PACKAGE) and w.name not in have and w.name not in uploaded:
                                r.put(w, f"{wheels_dir}/{w.name}")
                                uploaded.append(w.name)
                    kernel = r.run(nfq_install_command(r.host, kernel_requirement(None if r.dry_run else project_wheel)),
                                   timeout=INSTALL_TIMEOUT_S).stdout.strip()
                    if not r.dry_run:
                        fetch_built_wheel(r, wheels_dir, src)
            return SetupReport(f, warnings, uploaded, out.strip(), kernel)

        return by_name(on_hosts(remotes, install), remotes)
