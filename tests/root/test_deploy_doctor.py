"""``aspan deploy doctor`` (issue 37, item 3): every judge on recorded outputs (tests/data/iw, sources in its
README), the script run here with a stand-in iw, the command line's --dry-run and the pre-run refusal, and the
doctor on four virtual Pis (root; tests/root/vpi.py) with recorded iw outputs on two of them.

Outputs that are not recordings are said to be so where they are used: iw's one-line power save answer (its
format is iw's printf), nmcli's terse lines, pgrep, df and modprobe lines (their documented formats).
"""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
import pytest
import yaml
from tests.deploy.test_doctor import IW, aspan


# ---- on virtual Pis (root) -------------------------------------------------------------------------
FAKE_IW = """#!/bin/sh
# The doctor's stand-in iw on the virtual Pis: per Pi (by its mesh0 MAC address) it prints recorded outputs
# left beside it by the test; `dev mesh0 info` is iw's format with the one line the doctor reads (wiphy 0).
d=$(dirname "$0"); m=$(cat /sys/class/net/mesh0/address 2>/dev/null)
case "$*" in
  list) cat "$d/$m.list" ;;
  "reg get") cat "$d/$m.reg" ;;
  "dev mesh0 info") printf 'Interface mesh0\\n\\tifindex 2\\n\\twiphy 0\\n\\ttype IBSS\\n' ;;
  "dev mesh0 get power_save") cat "$d/$m.ps" ;;
  *) echo "fake iw: unsupported: $*" >&2; exit 1 ;;
esac
"""


FAKE_NMCLI = """#!/bin/sh
d=$(dirname "$0"); m=$(cat /sys/class/net/mesh0/address 2>/dev/null)
cat "$d/$m.nmcli" 2>/dev/null || { echo "Error: NetworkManager is not running."; exit 8; }
"""


@pytest.fixture
def doctor_lab(tmp_path):
    """Four virtual Pis reached as root (the venv of this test run stands in for `setup` on A, B and C, which
    tests/root/test_deploy_vpi.py tests), the stand-in iw and nmcli first in their PATH, A and B radios in the inventory."""
    from tests.root.vpi import VirtualPiLab, available
    why = available()
    if why is not None:
        if os.environ.get("ASPAN_REQUIRE_ROOT_TESTS") == "1":
            pytest.fail(f"virtual Pis: {why} (ASPAN_REQUIRE_ROOT_TESTS=1)")
        pytest.skip(f"virtual Pis: {why}")
    pytest.importorskip("fabric")
    fakebin = Path(tempfile.mkdtemp(prefix="aspan-doctor-fakebin-"))
    for name, text in (("iw", FAKE_IW), ("nmcli", FAKE_NMCLI)):
        (fakebin / name).write_text(text)
        (fakebin / name).chmod(0o755)
    lab = VirtualPiLab(tmp_path / "lab", extra_path=str(fakebin), sudo_user=False)
    try:
        lab.start()
        inv = lab.inventory(tmp_path / "inv.yaml", connect_timeout_s=3)
        doc = yaml.safe_load(inv.read_text())
        for h in doc["hosts"][:2]:
            h["radio"] = True
        inv.write_text(yaml.safe_dump(doc))
        macs = {n: subprocess.run(["ip", "netns", "exec", p.ns, "cat", "/sys/class/net/mesh0/address"],
                                  capture_output=True, text=True, check=True).stdout.strip()
                for n, p in lab.pis.items()}
        for node, files in (("A", {"list": "pi3bplus-cyw43455.iw-list.txt", "reg": "pi3bplus-cyw43455.iw-reg-get.txt"}),
                            ("B", {"list": "pi3bplus-nrc7292-halow.iw-list-modes.txt",
                                   "reg": "pi-ubuntu-jammy.iw-reg-get.country00.txt"})):
            for kind, f in files.items():
                shutil.copy(IW / f, fakebin / f"{macs[node]}.{kind}")
        (fakebin / f"{macs['A']}.ps").write_text("Power save: off\n")          # iw's format, not a recording
        (fakebin / f"{macs['B']}.ps").write_text("Power save: on\n")
        (fakebin / f"{macs['B']}.nmcli").write_text("mgmt0:connected\nmesh0:disconnected\n")
        for node in "ABC":
            venv = lab.install_root / node / "venv"
            venv.parent.mkdir(parents=True)
            venv.symlink_to(sys.prefix)
        lab.inv = inv
        yield lab
    finally:
        lab.stop()
        shutil.rmtree(fakebin, ignore_errors=True)
    assert lab.leftovers() == [] and lab.killed == []


def test_doctor_on_four_virtual_pis_with_recorded_radios(doctor_lab, tmp_path):
    lab = doctor_lab
    inv = str(lab.inv)
    r = aspan("deploy", "doctor", "-i", inv)
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout.splitlines()
    a = [ln for ln in out if ln.startswith("vpi-a: ")]
    assert a[:4] == ["vpi-a: PASS ibss: mesh0 (phy0) lists IBSS; 2412 MHz (channel 1) (20.0 dBm)",
                     "vpi-a: PASS regdomain: country DE (global); 2412 MHz allowed (2400-2483 MHz)",
                     "vpi-a: PASS power-save: mesh0: power save off",
                     "vpi-a: PASS managers: NetworkManager not running; no wpa_supplicant on mesh0; no dhcpcd on mesh0"]
    assert a[4].startswith("vpi-a: PASS clock: offset ") and a[5].startswith("vpi-a: SKIP nfqueue: no experiment given")
    assert a[6].startswith("vpi-a: SKIP congestion: no experiment given")
    assert a[7].startswith("vpi-a: PASS disk: ") and a[8].startswith("vpi-a: PASS version: aspan-testbed ")
    assert len(a) == 9
    text = r.stdout
    for line, fix in (("vpi-b: FAIL ibss: mesh0 (the phy): the driver lists no IBSS",
                       "    fix: no command fixes a driver"),
                      ("vpi-b: FAIL regdomain: no regulatory domain set (global: country 00",
                       "    fix: sudo iw reg set XX (XX: your two-letter country)"),
                      ("vpi-b: FAIL power-save: mesh0: power save on", "    fix: sudo iw dev mesh0 set power_save off"),
                      ("vpi-b: FAIL managers: NetworkManager manages mesh0 (disconnected)",
                       "    fix: sudo nmcli device set mesh0 managed no"),
                      ("vpi-d: FAIL version: aspan-testbed is not installed", f"    fix: aspan deploy setup -i {inv}")):
        assert line in text
        assert text.index(fix, text.index(line)) == text.index("\n", text.index(line)) + 1   # the fix right under it
    for c in ("ibss", "regdomain", "power-save"):
        assert f"vpi-c: SKIP {c}: the inventory says mesh0 is not a radio (radio: false): nothing to check" in text
    assert "vpi-c: PASS version: " in text and "vpi-c: FAIL" not in text
    assert "2 of 4 host(s) failed" in r.stderr
    good = aspan("deploy", "doctor", "-i", inv, "--hosts", "vpi-a,vpi-c")
    assert good.returncode == 0, good.stdout + good.stderr
    # the run refuses: B and D fail, nothing starts
    exp = tmp_path / "e.yaml"
    exp.write_text(yaml.safe_dump({"name": "e", "repetitions": 1, "flows": [{"sender": "A", "receiver": "D",
                                                                            "segments": 10}],
                                   "variants": [{"name": "reno"}]}))
    run = aspan("run", str(exp), "--backend", "pi", "--inventory", inv, "--out", str(tmp_path / "runs"))
    assert run.returncode == 2, run.stdout + run.stderr
    assert "doctor: vpi-b: FAIL ibss" in run.stderr and "doctor: vpi-d: FAIL version" in run.stderr
    assert "the doctor found 2 of 4 host(s) failing a check" in run.stderr and "nothing was started" in run.stderr
    assert not (tmp_path / "runs").exists()


def test_doctor_checks_nfnetlink_queue_for_a_kernel_experiment(doctor_lab, tmp_path):
    lab = doctor_lab
    kexp = tmp_path / "k.yaml"
    kexp.write_text(yaml.safe_dump({"name": "k", "backend": "pi", "pi": {"data_plane": "kernel"},
                                    "flows": [{"segments": 10}], "variants": [{"name": "reno"}]}))
    r = aspan("deploy", "doctor", "-i", str(lab.inv), "--hosts", "vpi-c", "--experiment", str(kexp))
    [line] = [ln for ln in r.stdout.splitlines() if " nfqueue: " in ln]
    # the Pi's kernel (here this machine's) has the experiment's netns.congestion (reno, the default)
    [cc] = [ln for ln in r.stdout.splitlines() if " congestion: " in ln]
    assert cc.startswith("vpi-c: PASS congestion: kernel congestion control reno available ("), r.stdout
    if Path("/sys/module/nfnetlink_queue").is_dir() or Path("/proc/net/netfilter/nfnetlink_queue").exists():
        assert line.startswith("vpi-c: PASS nfqueue: nfnetlink_queue present"), r.stdout
        assert r.returncode == 0, r.stdout + r.stderr
    else:
        assert line.startswith("vpi-c: ") and (" PASS " in line or " FAIL " in line)
