"""``aspan deploy`` from nothing on four arm64 Raspberry Pi OS Bookworm Pis (tests/root/vpi_arm64.py).

The x86 virtual Pis (tests/root/test_deploy_vpi.py) share this machine's file system and Python; these have their
own root (Debian bookworm arm64: Python 3.11.2, glibc 2.36, PEP 668's marker), users and sshd, and run
under qemu-user.  What qemu cannot do a Pi does is probed and the step that needs it skipped, saying so.

Runs on demand (``ASPAN_ARM64_PIS=1``, ``make test-arm64``): needs root, debootstrap and qemu-user-static
(``.ci/run`` installs them); the base root is built once per machine (5-8 minutes) and cached in
/var/cache/aspan/vpi-arm64, and a setup from nothing takes 16-26 minutes under qemu on 2 cores.  With
the variable set, a machine without them fails under ASPAN_REQUIRE_ROOT_TESTS=1 instead of skipping.
"""
from tests import ROOT
import json
import os
import subprocess
import sys
import time
from pathlib import Path
import pytest
from tests.root.vpi import available
from tests.root.vpi_arm64 import Arm64PiLab, netfilter_refused, unavailable




REQUIRED = os.environ.get("ASPAN_REQUIRE_ROOT_TESTS") == "1"


PLATFORM = "cp311-aarch64-glibc2.36"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if os.environ.get("ASPAN_ARM64_PIS") != "1":
        pytest.skip("arm64 virtual Pis run on demand: ASPAN_ARM64_PIS=1 (make test-arm64; root; the base root's "
                    "build and a setup from nothing under qemu take 25-40 minutes on 2 cores)")
    why = available() or unavailable()
    if why is not None:
        if REQUIRED:
            pytest.fail(f"arm64 virtual Pis: {why} (ASPAN_REQUIRE_ROOT_TESTS=1: these tests must run here)")
        pytest.skip(f"arm64 virtual Pis: {why}")
    base = tmp_path_factory.mktemp("vpi-arm64")
    lab = Arm64PiLab(base / "lab")
    try:
        lab.start()
        lab.inv = lab.inventory(base / "inv.yaml")
        lab.tmp = base
        yield lab
    finally:
        lab.stop()
    assert lab.leftovers() == []
    assert [k for k in lab.killed if "sshd" not in k] == [], "processes the tests left running in the Pis"


def aspan(*args: str, timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "experiments", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def installed(lab):
    """``aspan deploy setup`` from nothing: an empty wheelhouse, an empty pip cache, four bare Pis."""
    t = time.monotonic()
    r = aspan("deploy", "setup", "-i", str(lab.inv), "--wheelhouse", str(lab.tmp / "wheelhouse"), timeout=3000,
              env={"PIP_CACHE_DIR": str(lab.tmp / "pip-cache")})
    lab.setup_seconds = time.monotonic() - t
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    lab.setup_output = r.stdout
    print(f"aspan deploy setup on four arm64 Pis from nothing: {lab.setup_seconds:.0f} s")
    return lab


def test_each_pi_is_raspberry_pi_os_bookworm_arm64_with_its_own_users(lab):
    for node in lab.nodes:
        r = lab.run_in(node, "python3 -c 'import json, platform, sys; print(json.dumps([platform.machine(), "
                             "platform.python_version(), platform.libc_ver()]))'; id -u pi; "
                             "test -f /usr/lib/python3.11/EXTERNALLY-MANAGED && echo pep668; cat /etc/hostname")
        assert r.returncode == 0, r.stderr
        lines = r.stdout.split("\n")
        assert json.loads(lines[0]) == ["aarch64", "3.11.2", ["glibc", "2.36"]]
        assert lines[1] == "1000" and lines[2] == "pep668" and lines[3] == f"vpi-{node.lower()}"
    # the Pis' users are their own: the orchestrator has no user pi of that root
    assert subprocess.run(["getent", "passwd", "pi"], capture_output=True).returncode != 0 or \
        Path("/home/pi/aspan").exists() is False


def test_setup_from_nothing_builds_the_aarch64_wheelhouse_and_netfilterqueue_on_the_pi(installed):
    lab = installed
    out = lab.setup_output
    assert PLATFORM in out or (lab.tmp / "wheelhouse" / PLATFORM).is_dir(), out
    assert any(w.name.startswith("numpy-") and "aarch64" in w.name
               for w in (lab.tmp / "wheelhouse" / PLATFORM).glob("*.whl"))
    for node in lab.nodes:
        assert f"vpi-{node.lower()}: kernel data plane: netfilterqueue installed" in out, out
        venv = f"{lab.install_root}/{node}/venv/bin/python"
        r = lab.run_in(node, f"su pi -c \"{venv} -c 'import platform, netfilterqueue, numpy, aspan; "
                             f"print(platform.machine(), netfilterqueue.__file__)'\"; "
                             f"ls {lab.install_root}/{node}/wheels | grep -i '^netfilterqueue.*aarch64.whl$'; "
                             "ls /usr/lib/python3/dist-packages | grep -ci -E '^(numpy|aspan|netfilterqueue)' || true")
        assert r.returncode == 0, r.stdout + r.stderr
        lines = r.stdout.split("\n")
        assert lines[0].startswith("aarch64 ") and "/venv/" in lines[0], lines
        assert lines[1].lower().startswith("netfilterqueue") and lines[1].endswith("aarch64.whl"), lines
        assert lines[2] == "0", "setup installed into the system Python (PEP 668): " + r.stdout


def test_status_reports_the_installed_version_from_each_arm64_pi(installed):
    r = aspan("deploy", "status", "-i", str(installed.inv), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    for node in installed.nodes:
        assert any(ln.startswith(f"vpi-{node.lower()}") and "0.1.0" in ln for ln in r.stdout.splitlines()), r.stdout


def test_the_kernel_data_plane_step_says_why_qemu_cannot_run_it(installed):
    """iptables and NFQUEUE need netlink families qemu-user does not translate: probed, then skipped."""
    why = netfilter_refused(installed, "A")
    if why is None:
        pytest.fail("this qemu runs iptables inside the arm64 Pis: the kernel data plane and MAC-filter runs "
                    "can be written for them now (tests/root/vpi_arm64.py, netfilter_refused)")
    pytest.skip(why)


def _state(lab) -> dict[str, str]:
    """What a run may not leave changed on a Pi: addresses, routes, and the processes besides sshd."""
    return {n: lab.run_in(n, "ip -br addr; ip route; ps -eo comm= | grep -v -x -e sshd -e ps -e sh | sort").stdout
            for n in lab.nodes}


def test_deploy_run_of_paper_lossy_on_the_overlay_records_aarch64(installed, tmp_path):
    """paper-lossy (the chain, 0.5 % loss per node, 16,000 segments) with SACK and A-SPAN, one repetition,
    on the Pis' own aarch64 Python; each Pi's platform is in meta.json and the Pis are left as they were."""
    lab = installed
    before = _state(lab)
    r = aspan("run", "experiments/paper-lossy.yaml", "--backend", "pi", "--inventory", str(lab.inv),
              "--repetitions", "1", "--variants", "sack,aspan-1.00-once", "--out", str(tmp_path / "runs"), timeout=2400)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    [run] = list((tmp_path / "runs" / "paper-lossy").iterdir())
    import pandas as pd
    df = pd.read_csv(run / "summary.csv")
    assert list(df["variant"]) == ["sack", "aspan-1.00-once"]
    assert (df["status"] == "ok").all() and df["integrity_ok"].all() and (df["segments"] == 16000).all()
    assert (df["drops_loss"] > 0).all()
    for variant in df["variant"]:
        meta = json.loads((run / variant / "rep0" / "meta.json").read_text())
        assert meta["graph_filter"] == "none" and meta["mac_filter"] is None
        assert meta["platforms"] == {n: {"machine": "aarch64", "python": "3.11.2", "libc": "glibc 2.36"}
                                     for n in lab.nodes}
    print("arm64 overlay paper-lossy goodput (Mbit/s):", dict(zip(df["variant"], df["goodput_mbps"])))
    assert _state(lab) == before
