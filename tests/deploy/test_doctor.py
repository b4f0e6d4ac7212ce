"""``aspan deploy doctor`` (issue 37, item 3): every judge on recorded outputs (tests/data/iw, sources in its
README), the script run here with a stand-in iw, the command line's --dry-run and the pre-run refusal, and the
doctor on four virtual Pis (root; tests/root/vpi.py) with recorded iw outputs on two of them.

Outputs that are not recordings are said to be so where they are used: iw's one-line power save answer (its
format is iw's printf), nmcli's terse lines, pgrep, df and modprobe lines (their documented formats).
"""
from tests import ROOT, DATA
import os
import subprocess
import sys
import tomllib
from pathlib import Path
import pytest
import yaml
from deploy import doctor as d
from deploy.doctor import FAIL, PASS, SKIP, Context, Section
from deploy.inventory import InventoryError, load_inventory




IW = DATA / "iw"


CTX = Context("wlan0", 2412, 1, None, inventory="pi.yaml")


def rec(name: str) -> Section:
    return Section((IW / name).read_text(), 0)


def ctx(**kw) -> Context:
    return Context(**{**CTX.__dict__, **kw})


# ---- check 1: IBSS and the channel (iw list) --------------------------------------------------------
@pytest.mark.parametrize("name, phy", [("pi3bplus-cyw43455.iw-list.txt", "phy0"),
                                       ("pi4-cyw43455.iw-phy-info.txt", "phy0")])
def test_the_pi_3bplus_and_pi_4_radios_do_ibss_on_channel_1(name, phy):
    r = d.judge_ibss(rec(name), None, CTX)
    assert r.status == PASS and r.detail == f"wlan0 ({phy}) lists IBSS; 2412 MHz (channel 1) (20.0 dBm)"


@pytest.mark.parametrize("name, phy", [("pi5-cyw43455.iw-phy.partial.txt", "phy0"),
                                       ("tl-wn722n-ath9k_htc.iw-list.partial.txt", "phy1")])
def test_recordings_cut_before_their_frequency_list_show_ibss_and_say_the_list_is_missing(name, phy):
    phys = d.parse_iw_list(rec(name).text)
    assert "IBSS" in phys[phy].modes
    r = d.judge_ibss(rec(name), None, CTX)
    assert r.status == FAIL and "lists IBSS but iw list shows no frequency list" in r.detail


def test_the_rtl8812au_dongle_does_ibss_on_channel_1():
    r = d.judge_ibss(rec("rtl8812au-usb.iw-list.partial.txt"), None, CTX)
    assert r.status == PASS and r.detail.startswith("wlan0 (phy1) lists IBSS; 2412 MHz") and "30.0 dBm" in r.detail


def test_a_radio_without_ibss_fails_and_says_no_command_fixes_a_driver():
    r = d.judge_ibss(rec("pi3bplus-nrc7292-halow.iw-list-modes.txt"), None, CTX)
    assert r.status == FAIL and "lists no IBSS among its interface modes (managed, AP, AP/VLAN" in r.detail
    assert r.fix.startswith("no command fixes a driver: use a radio whose driver lists IBSS")
    assert r.lines()[1].startswith("    fix: no command fixes a driver")


def test_a_disabled_or_no_ir_channel_fails_with_the_usable_channels():
    lst = rec("pi3bplus-cyw43455.iw-list.txt")
    ch14 = d.judge_ibss(lst, None, ctx(freq=2484, channel=14))
    assert ch14.status == FAIL and "2484 MHz (channel 14) is disabled" in ch14.detail
    assert "usable here: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13" in ch14.fix
    ch52 = d.judge_ibss(lst, None, ctx(freq=5260, channel=52))
    assert ch52.status == FAIL and "is no-IR" in ch52.detail
    pi4_52 = d.judge_ibss(rec("pi4-cyw43455.iw-phy-info.txt"), None, ctx(freq=5260, channel=52))
    assert pi4_52.status == FAIL and "a radar (DFS) channel" in pi4_52.detail
    assert d.judge_ibss(lst, None, ctx(freq=5180, channel=36)).status == PASS


def test_the_interface_picks_its_phy_among_several():
    both = Section(rec("pi3bplus-cyw43455.iw-list.txt").text + "\n" + rec("rtl8812au-usb.iw-list.partial.txt").text, 0)
    dev1 = Section("Interface wlan1\n\tifindex 5\n\twiphy 1\n\ttype managed\n", 0)   # iw dev's format, not a recording
    r = d.judge_ibss(both, dev1, ctx(iface="wlan1"))
    assert r.status == PASS and "(phy1)" in r.detail and "30.0 dBm" in r.detail
    gone = d.judge_ibss(both, Section("command failed: No such device (-19)", 237), ctx(iface="wlan9"))
    assert gone.status == FAIL and "iw knows no wireless interface wlan9" in gone.detail


# ---- check 2: the regulatory domain (iw reg get) ---------------------------------------------------
def test_a_set_country_allows_channel_1():
    de = d.judge_reg(rec("pi3bplus-cyw43455.iw-reg-get.txt"), CTX)
    assert de.status == PASS and de.detail == "country DE (global); 2412 MHz allowed (2400-2483 MHz)"
    gb = d.judge_reg(rec("pi5.iw-reg-get.txt"), ctx(country="GB"))
    assert gb.status == PASS and gb.detail.startswith("country GB (global)")


def test_country_00_fails_with_the_command_that_sets_the_country():
    r = d.judge_reg(rec("pi-ubuntu-jammy.iw-reg-get.country00.txt"), CTX)
    assert r.status == FAIL and "no regulatory domain set (global: country 00" in r.detail
    assert r.fix.startswith("sudo iw reg set XX (XX: your two-letter country)")
    with_country = d.judge_reg(rec("pi-ubuntu-jammy.iw-reg-get.country00.txt"), ctx(country="DE"))
    assert with_country.fix.startswith("sudo iw reg set DE; to keep it over reboots: sudo raspi-config nonint "
                                       "do_wifi_country DE")


def test_another_country_than_the_inventorys_or_a_dfs_channel_fails():
    other = d.judge_reg(rec("pi3bplus-cyw43455.iw-reg-get.txt"), ctx(country="GB"))
    assert other.status == FAIL and "country DE (global), the inventory's mesh.country is GB" in other.detail
    assert other.fix.startswith("sudo iw reg set GB")
    dfs = d.judge_reg(rec("pi3bplus-cyw43455.iw-reg-get.txt"), ctx(freq=5260, channel=52))
    assert dfs.status == FAIL and "only with DFS (5250-5350 MHz)" in dfs.detail


def test_the_phy_domain_99_of_brcmfmac_is_not_mistaken_for_the_global_one():
    doms = d.parse_reg(rec("pi5.iw-reg-get.txt").text)
    assert [(x.scope, x.country) for x in doms] == [("global", "GB"), ("phy#0", "99")]
    assert doms[0].rules[0] == (2400, 2483, [])


# ---- check 3: power save (iw's format: "Power save: on|off", not a recording) --------------------------
def test_power_save():
    assert d.judge_power_save(Section("Power save: off", 0), CTX).status == PASS
    on = d.judge_power_save(Section("Power save: on", 0), CTX)
    assert on.status == FAIL and on.fix.startswith("sudo iw dev wlan0 set power_save off")
    nope = d.judge_power_save(Section("command failed: Operation not supported (-95)", 161), CTX)
    assert nope.status == SKIP and "reports no power save state" in nope.detail
    assert d.judge_power_save(Section("Power save: on", 0), ctx(radio=False)).status == SKIP


# ---- check 4: NetworkManager, wpa_supplicant, dhcpcd (nmcli -t and pgrep -a formats) -----------------------
NONE = Section("", 1)


def test_an_interface_networkmanager_manages_fails_with_nmcli_managed_no():
    nm = Section("eth0:connected\nwlan0:disconnected\nlo:unmanaged", 0)
    r = d.judge_managers(nm, NONE, NONE, NONE, CTX)
    assert r.status == FAIL and r.detail == "NetworkManager manages wlan0 (disconnected)"
    assert r.fix == "sudo nmcli device set wlan0 managed no"
    ok = d.judge_managers(Section("eth0:connected\nwlan0:unmanaged", 0), NONE, NONE, NONE, CTX)
    assert ok.status == PASS and ok.detail.startswith("NetworkManager: wlan0 unmanaged")
    assert d.judge_managers(Section("@@absent", 0), NONE, NONE, NONE, CTX).detail.startswith("no nmcli")


def test_wpa_supplicant_on_the_interface_fails_but_networkmanagers_dbus_one_does_not():
    own = Section("612 wpa_supplicant -B -c/etc/wpa_supplicant/wpa_supplicant.conf -iwlan0 -Dnl80211,wext", 0)
    r = d.judge_managers(Section("@@absent", 0), own, NONE, NONE, CTX)
    assert r.status == FAIL and "wpa_supplicant runs on wlan0 (pid 612" in r.detail and "sudo kill 612" in r.fix
    dbus = Section("631 /sbin/wpa_supplicant -u -s -O DIR=/run/wpa_supplicant GROUP=netdev", 0)
    assert d.judge_managers(Section("wlan0:unmanaged", 0), dbus, NONE, NONE, CTX).status == PASS


def test_dhcpcd_for_every_interface_fails_unless_its_conf_denies_the_interface():
    dh = Section("401 /usr/sbin/dhcpcd -w -q", 0)
    r = d.judge_managers(Section("@@absent", 0), NONE, dh, Section("", 1), CTX)
    assert r.status == FAIL and "dhcpcd runs for every interface" in r.detail
    assert r.fix == "echo 'denyinterfaces wlan0' | sudo tee -a /etc/dhcpcd.conf && sudo systemctl restart dhcpcd"
    denied = d.judge_managers(Section("@@absent", 0), NONE, dh, Section("denyinterfaces wlan0", 0), CTX)
    assert denied.status == PASS and "excluded in /etc/dhcpcd.conf" in denied.detail


# ---- checks 5-8 ---------------------------------------------------------------------------------
def test_clock():
    assert d.judge_clock(0.004, 0.001).status == PASS
    off = d.judge_clock(-1.5, 0.002)
    assert off.status == FAIL and "offset -1500.0 ms" in off.detail
    assert off.fix.startswith("sudo timedatectl set-ntp true")
    assert d.judge_clock(0.09, 0.02).status == FAIL                      # the error counts against the bound
    assert d.judge_clock(None, None, "clock: 'python3' did not start").status == FAIL


def test_nfqueue_only_for_the_kernel_data_plane():
    assert d.judge_nfqueue(None, ctx(kernel=None)).status == SKIP
    assert "pi.data_plane: udp" in d.judge_nfqueue(None, ctx(kernel=False)).detail
    assert d.judge_nfqueue(Section("modprobe: ok\nsys_module yes", 0), ctx(kernel=True)).status == PASS
    missing = Section("modprobe: modprobe: FATAL: Module nfnetlink_queue not found in directory /lib/modules/6.6.51", 0)
    r = d.judge_nfqueue(missing, ctx(kernel=True))
    assert r.status == FAIL and "FATAL: Module nfnetlink_queue not found" in r.detail
    assert r.fix.startswith("sudo modprobe nfnetlink_queue")


def test_congestion_only_for_the_kernel_data_plane_and_names_the_missing_control():
    assert d.judge_congestion(None, ctx(kernel=None)).status == SKIP
    assert d.judge_congestion(None, ctx(kernel=False, congestion=("bbr",))).status == SKIP
    have = Section("available: reno cubic bbr", 0)
    r = d.judge_congestion(have, ctx(kernel=True, congestion=("cubic", "bbr")))
    assert r.status == PASS and "cubic, bbr" in r.detail
    r = d.judge_congestion(Section("available: reno cubic", 0), ctx(kernel=True, congestion=("reno", "bbr")))
    assert r.status == FAIL and r.detail == "no bbr in this kernel (it offers reno cubic)"
    assert r.fix.startswith("sudo modprobe tcp_bbr") and "CONFIG_TCP_CONG_BBR" in r.fix
    assert d.judge_congestion(None, ctx(kernel=True, congestion=("reno",))).status == FAIL   # nothing read


def test_the_congestion_section_loads_and_lists_the_controls_on_this_machine(tmp_path):
    """The script's congestion section, run by sh here (not root: modprobe fails quietly, the list is read)."""
    class FakeHost:
        sudo = False

    c = ctx(kernel=True, congestion=("reno",), radio=False, install_dir=str(tmp_path))
    out = subprocess.run(["sh", "-c", d.doctor_script(FakeHost(), c)], capture_output=True, text=True,
                         timeout=120).stdout
    sec = d.split_sections(out)["congestion"]
    assert sec.text.startswith("available: ") and "reno" in sec.text.split()   # Linux always has reno
    assert d.judge_congestion(sec, c).status == PASS

def test_disk():
    df = "Filesystem     1024-blocks    Used Available Capacity Mounted on\n/dev/root  {0} 1000 {1} 10% /\n"
    assert d.judge_disk(Section(df.format(30000000, 20000000), 0), CTX).status == PASS
    low = d.judge_disk(Section(df.format(30000000, 500000), 0), CTX)
    assert low.status == FAIL and "0.5 GiB free on / (/home/pi/aspan): below the 1.0 GiB" in low.detail


def test_version():
    here = ("0.1.0", {"deploy/doctor.py": "abcdef0123456789", "deploy/__init__.py": "0123456789abcdef"})
    same = Section("version 0.1.0\nfile deploy/__init__.py 0123456789abcdef\nfile deploy/doctor.py abcdef0123456789", 0)
    ok = d.judge_version(same, here, CTX)
    assert ok.status == PASS and ok.detail == "aspan-testbed 0.1.0, the same code as here (2 files)"
    stale = Section(same.text + "\nfile routing/old.py 1111111111111111", 0)        # a stale build/lib module there
    assert d.judge_version(stale, here, CTX).detail.endswith("(2 files; 1 more there, not here)")
    old = d.judge_version(Section("version 0.1.0\nfile deploy/doctor.py 0000000000000000", 0), here, CTX)
    assert old.status == FAIL and old.fix == "aspan deploy setup -i pi.yaml"
    assert "1 file(s) differ, 1 missing (deploy/doctor.py, deploy/__init__.py)" in old.detail
    other = d.judge_version(Section("version 0.0.9", 0), here, CTX)
    assert other.status == FAIL and other.detail == "aspan-testbed 0.0.9 installed, this machine runs 0.1.0"
    none = d.judge_version(Section("sh: 1: /home/pi/aspan/venv/bin/python: not found", 127), here, CTX)
    assert none.status == FAIL and "not installed in /home/pi/aspan/venv" in none.detail


def test_the_manifest_covers_the_packages_the_wheel_holds():
    found = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    assert sorted(p.rstrip("*") for p in found) == sorted(d.PACKAGES)
    ver, files = d.local_version()
    assert not ver.startswith("unknown") and "deploy/doctor.py" in files and "experiments/backends/pi.py" in files
    assert not any("__pycache__" in f for f in files)


def test_the_inventory_field_radio_takes_true_or_false_only():
    doc = {"hosts": [{"node": "A", "host": "h", "mesh_address": "10.2.1.1", "radio": "no"}]}
    with pytest.raises(InventoryError) as e:
        load_inventory(doc, check_files=False)
    assert str(e.value) == "inventory.yaml: hosts[0].radio: expected true/false, got str 'no'"
    doc["hosts"][0]["radio"] = False
    assert load_inventory(doc, check_files=False).hosts[0].radio is False
    doc["hosts"][0].pop("radio")
    assert load_inventory(doc, check_files=False).hosts[0].radio is True


# ---- the script itself, run here with a stand-in iw ----------------------------------------------
def test_the_script_runs_every_command_and_the_judges_read_its_sections(tmp_path):
    """The host's script, run by sh on this machine: a stand-in iw prints the Pi 3B+ recording (and iw's own
    one-line power save answer); the venv's python is this one, so the version matches."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "iw").write_text(
        "#!/bin/sh\ncase \"$*\" in\n"
        f"  list) cat {IW / 'pi3bplus-cyw43455.iw-list.txt'} ;;\n"
        f"  'reg get') cat {IW / 'pi3bplus-cyw43455.iw-reg-get.txt'} ;;\n"
        "  'dev wlan0 info') printf 'Interface wlan0\\n\\twiphy 0\\n' ;;\n"
        "  'dev wlan0 get power_save') echo 'Power save: off' ;;\n"
        "  *) echo \"unsupported: $*\" >&2; exit 1 ;;\nesac\n")
    (fake / "iw").chmod(0o755)
    inst = tmp_path / "aspan"
    inst.mkdir()
    (inst / "venv").symlink_to(sys.prefix)
    c = ctx(install_dir=str(inst), kernel=False)

    class FakeHost:
        sudo = False

    script = d.doctor_script(FakeHost(), c)
    assert "\n" not in script                                        # one command line: one line under --dry-run
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}).stdout
    secs = d.split_sections(out)
    assert set(secs) == {"iw-dev", "iw-list", "iw-reg", "power-save", "nmcli", "wpa", "dhcpcd", "dhcpcd-conf", "disk",
                         "version"}
    res = {r.check: r for r in d.judge_all(out, c, (0.001, 0.0005, None), d.local_version())}
    assert list(res) == list(d.CHECKS)
    for name in ("ibss", "regdomain", "power-save", "clock", "disk", "version"):
        assert res[name].status == PASS, res[name]
    assert res["nfqueue"].status == SKIP and res["congestion"].status == SKIP
    assert len(secs["iw-list"].text) <= d.OUTPUT_CAP + 1


def test_split_sections_keeps_what_arrived_of_a_cut_off_section():
    secs = d.split_sections(f"{d.MARK} a\nx\n{d.MARK}-rc a 0\n{d.MARK} b\npartial")
    assert secs["a"].text == "x" and secs["a"].rc == 0 and secs["b"].text == "partial" and secs["b"].rc is None


# ---- the command line (no host) -------------------------------------------------------------------
def write_inventory(tmp: Path, **mesh) -> Path:
    key = tmp / "key"
    key.write_text("not a key\n")
    doc = {"defaults": {"key_file": str(key)}, "mesh": {"ssid": "m", "channel": 6, **mesh},
           "hosts": [{"name": "pi-a", "node": "A", "host": "192.0.2.1", "mesh_address": "10.2.1.1"},
                     {"name": "pi-b", "node": "B", "host": "192.0.2.2", "mesh_address": "10.2.1.2", "radio": False},
                     {"name": "pi-c", "node": "C", "host": "192.0.2.3", "mesh_address": "10.2.1.3"},
                     {"name": "pi-d", "node": "D", "host": "192.0.2.4", "mesh_address": "10.2.1.4"}]}
    p = tmp / "inv.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


def aspan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "experiments", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_doctor_dry_run_prints_each_hosts_script_and_the_clock_and_connects_nowhere(tmp_path):
    pytest.importorskip("fabric")
    inv = write_inventory(tmp_path)
    kexp = tmp_path / "k.yaml"
    kexp.write_text(yaml.safe_dump({"name": "k", "backend": "pi", "pi": {"data_plane": "kernel"},
                                    "flows": [{"segments": 10}], "variants": [{"name": "reno"}]}))
    r = aspan("deploy", "doctor", "-i", str(inv), "--dry-run", "--experiment", str(kexp))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    a = [ln for ln in lines if ln.startswith("[pi-a] ")]
    b = [ln for ln in lines if ln.startswith("[pi-b] ")]
    assert len(a) == 2 and len(b) == 2 and len(lines) == 8              # the script and the clock, per host
    assert "iw list" in a[0] and "iw reg get" in a[0] and "iw dev wlan0 get power_save" in a[0]
    assert "iw " not in b[0]                                            # radio: false: no radio commands at all
    for ln in (a[0], b[0]):
        assert "nmcli -t -f DEVICE,STATE device" in ln and "pgrep -a wpa_supplicant" in ln and "df -Pk" in ln
        assert "sudo -n modprobe nfnetlink_queue" in ln and "/home/pi/aspan/venv/bin/python -c" in ln
    assert "python3 -u -c" in a[1] and "(then 5 round trips" in a[1]
    plain = aspan("deploy", "doctor", "-i", str(inv), "--dry-run", "--hosts", "pi-c")
    assert plain.returncode == 0 and "modprobe" not in plain.stdout and "[pi-a]" not in plain.stdout


def test_deploy_run_dry_run_shows_the_doctors_commands_first(tmp_path):
    pytest.importorskip("fabric")
    inv = write_inventory(tmp_path)
    exp = tmp_path / "e.yaml"
    exp.write_text(yaml.safe_dump({"name": "e", "repetitions": 1, "flows": [{"segments": 10}],
                                   "variants": [{"name": "reno"}]}))
    r = aspan("deploy", "run", str(exp), "-i", str(inv), "--dry-run", "--out", str(tmp_path / "runs"))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    first = out.index("[local] first the doctor's checks on every host")
    assert first < out.index("[pi-a] run: PATH=") < out.index("== reno rep 0 ==")
    assert out.count("@@aspan-doctor iw-list") == 3                    # the three radios (pi-b: radio false)


def test_a_failed_check_refuses_the_run_with_the_report_and_starts_nothing(tmp_path, monkeypatch, capsys):
    """The pre-run doctor, with every host's answer given (no host): pi-c's power save is on."""
    pytest.importorskip("fabric")
    from experiments.cli import main
    inv = write_inventory(tmp_path)
    exp = tmp_path / "e.yaml"
    exp.write_text(yaml.safe_dump({"name": "e", "repetitions": 1, "flows": [{"segments": 10}],
                                   "variants": [{"name": "reno"}]}))

    def answers(remotes, contexts, measure=None):
        good = [d.Result(c, PASS, "fine") for c in d.CHECKS]
        return {r.name: (good[:2] + [d.judge_power_save(Section("Power save: on", 0), contexts[r.name])] + good[3:]
                         if r.name == "pi-c" else good) for r in remotes}

    monkeypatch.setattr(d, "examine_hosts", answers)
    out = tmp_path / "runs"
    for argv in (["run", str(exp), "--backend", "pi", "--inventory", str(inv), "--out", str(out)],
                 ["deploy", "run", str(exp), "-i", str(inv), "--out", str(out)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "doctor: pi-c: FAIL power-save: wlan0: power save on" in err
        assert "    fix: sudo iw dev wlan0 set power_save off" in err
        assert "doctor: pi-a: PASS clock: fine" in err
        assert "aspan: error: the doctor found 1 of 4 host(s) failing a check" in err and "nothing was started" in err
        assert not out.exists()
