"""The deploy package without hosts: inventory validation, the exact commands of --dry-run, parsers.

The end-to-end tests on virtual Pis (namespaces + sshd) are in tests/root/test_deploy_vpi.py.
"""
from tests import ROOT
import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
import pytest
import yaml
from deploy import clock, install, mesh, nodes, routes
from deploy.hosts import GroupException, Remote, describe_error, failure_lines, on_hosts, open_remotes
from deploy.inventory import InventoryError, channel_to_freq, load_inventory, load_inventory_file
from experiments.backends.pi import node_configs




def inv_doc(**top):
    doc = {"defaults": {"user": "pi", "key_file": "id_test", "iface": "wlan0", "install_dir": "/home/pi/aspan"},
           "mesh": {"ssid": "aspan-mesh", "channel": 6},
           "hosts": [{"name": f"pi-{n.lower()}", "node": n, "host": f"192.0.2.{10 + i}",
                      "mesh_address": f"10.2.1.{i + 1}"} for i, n in enumerate("ABCD")]}
    doc.update(top)
    return doc


def write_inv(tmp_path: Path, doc=None) -> Path:
    (tmp_path / "id_test").write_text("not a real key\n")
    p = tmp_path / "inv.yaml"
    p.write_text(yaml.safe_dump(doc or inv_doc()))
    return p


# ---- inventory ---------------------------------------------------------------------
def test_inventory_defaults_and_per_host_overrides(tmp_path):
    doc = inv_doc()
    doc["hosts"][2]["user"] = "root"
    doc["hosts"][2]["install_dir"] = "/opt/aspan"
    inv = load_inventory_file(write_inv(tmp_path, doc))
    a, c = inv.by_node()["A"], inv.by_node()["C"]
    assert a.key_file == str(tmp_path / "id_test")          # relative to the inventory file
    assert (a.user, a.sudo, a.work_dir, a.aspan) == ("pi", True, "/home/pi/aspan/runs", "/home/pi/aspan/venv/bin/aspan")
    assert (c.user, c.sudo, c.work_dir) == ("root", False, "/opt/aspan/runs")
    assert a.strict_host_keys is True                         # only virtual Pis turn it off
    assert inv.freq == 2437 and inv.udp_port == 7000
    assert [h.name for h in inv.select(["B", "pi-d"])] == ["pi-b", "pi-d"]


@pytest.mark.parametrize("mutate, path, words", [
    (lambda d: d["hosts"][1].update(mesh_adress="10.2.1.9"), "hosts[1].mesh_adress", "did you mean 'mesh_address'"),
    (lambda d: d["hosts"][1].pop("node"), "hosts[1].node", "required"),
    (lambda d: d["hosts"][3].update(mesh_address="10.2.1.1"), "hosts[3].mesh_address", "repeats hosts[0]"),
    (lambda d: d["hosts"][0].update(mesh_address="10.2.1.300"), "hosts[0].mesh_address", "IPv4"),
    (lambda d: d["hosts"][0].update(mesh_address="10.2.2.1"), "hosts", "one /24"),
    (lambda d: d["defaults"].update(port="22"), "defaults.port", "integer"),
    (lambda d: d["defaults"].update(install_dir="aspan"), "defaults.install_dir", "absolute"),
    (lambda d: d["hosts"][2].update(key_file="nope"), "hosts[2].key_file", "no such file"),
    (lambda d: d["mesh"].update(bssid="zz"), "mesh.bssid", "MAC"),
    (lambda d: d.update(hosts=[]), "hosts", "non-empty"),
])
def test_inventory_errors_name_file_and_field(tmp_path, mutate, path, words):
    doc = inv_doc()
    mutate(doc)
    p = write_inv(tmp_path, doc)
    with pytest.raises(InventoryError) as e:
        load_inventory_file(p)
    assert e.value.path == path and words in e.value.message
    assert str(e.value).startswith(f"{p}: {path}: ")


def test_bad_inventory_is_reported_by_the_cli_with_exit_2(tmp_path):
    doc = inv_doc()
    doc["hosts"][0]["port"] = 0
    p = write_inv(tmp_path, doc)
    r = subprocess.run([sys.executable, "-m", "experiments", "deploy", "status", "-i", str(p)],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2
    assert f"{p}: hosts[0].port: expected a value >= 1" in r.stderr


def test_channels_map_to_frequencies():
    assert [channel_to_freq(c) for c in (1, 6, 13, 14, 36)] == [2412, 2437, 2472, 2484, 5180]


# ---- dry run: the exact commands per host -------------------------------------------
def dry(tmp_path, *args, doc=None) -> subprocess.CompletedProcess:
    p = write_inv(tmp_path, doc)
    return subprocess.run([sys.executable, "-m", "experiments", "deploy", *args, "-i", str(p), "--dry-run"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def host_lines(out: str, name: str) -> list[str]:
    return [ln[len(name) + 3:] for ln in out.splitlines() if ln.startswith(f"[{name}] ")]


def test_mesh_dry_run_prints_the_ibss_commands_of_every_host_under_sudo(tmp_path):
    r = dry(tmp_path, "mesh")
    assert r.returncode == 0, r.stderr
    inv = load_inventory(inv_doc(), check_files=False)
    for h in inv.hosts:
        lines = host_lines(r.stdout, h.name)
        want = [f"run: {Remote(h, dry_run=True).wrap(c, root=True)}"
                for c in mesh.mesh_commands(h, inv) + [mesh.state_command(h)]]
        assert lines == want
    a = host_lines(r.stdout, "pi-a")
    assert all(ln.startswith("run: sudo -n sh -c ") for ln in a)   # user pi: root commands via sudo
    text = "\n".join(a)
    for cmd in ("iw dev wlan0 set type ibss", "ip link set wlan0 up", "ibss join aspan-mesh 2437 fixed-freq",
                "ip addr replace 10.2.1.1/24 dev wlan0"):
        assert cmd in text
    assert "10.2.1.2/24" in "\n".join(host_lines(r.stdout, "pi-b"))


def test_mesh_commands_check_state_before_changing_it():
    doc = inv_doc()
    doc["mesh"].update(country="DE", bssid="02:11:22:33:44:55")
    inv = load_inventory(doc, check_files=False)
    cmds = mesh.mesh_commands(inv.hosts[0], inv)
    set_type = next(c for c in cmds if "set type ibss" in c)
    assert set_type.startswith("iw dev wlan0 info | grep -q 'type IBSS' ||")
    join = next(c for c in cmds if "ibss join" in c)
    assert "grep -qxF aspan-mesh &&" in join and join.endswith("ibss join aspan-mesh 2437 fixed-freq 02:11:22:33:44:55; }")
    assert any(c.startswith("iw reg get | grep -q 'country DE:' || iw reg set DE") for c in cmds)
    assert cmds[-1] == "ip addr replace 10.2.1.1/24 dev wlan0"     # replace: idempotent


def test_routes_dry_run_follows_the_chain(tmp_path):
    r = dry(tmp_path, "routes")
    assert r.returncode == 0, r.stderr
    expect = {"pi-a": ["10.2.1.3/32 via 10.2.1.2", "10.2.1.4/32 via 10.2.1.2"],
              "pi-b": ["10.2.1.4/32 via 10.2.1.3"], "pi-c": ["10.2.1.1/32 via 10.2.1.2"],
              "pi-d": ["10.2.1.1/32 via 10.2.1.3", "10.2.1.2/32 via 10.2.1.3"]}
    for name, rts in expect.items():
        text = "\n".join(host_lines(r.stdout, name))
        assert "sysctl -qw net.ipv4.ip_forward=1" in text
        assert "net.ipv4.conf.wlan0.send_redirects=0" in text
        got = [ln.split("ip route replace ")[1].split(" dev")[0] for ln in host_lines(r.stdout, name)
               if "ip route replace" in ln]
        assert sorted(got) == rts


def test_routes_follow_an_experiment_chain_and_overrides():
    inv = load_inventory(inv_doc(), check_files=False)
    exp = {"topology": {"chain": ["A", "C", "B", "D"], "routes": {}}}
    plan = routes.route_plan(inv, exp)
    assert plan["A"] == {"10.2.1.2": "10.2.1.3", "10.2.1.4": "10.2.1.3"}
    assert routes.route_commands(inv.hosts[0], plan["A"], remove=True)[0] == \
        "ip route del 10.2.1.2/32 via 10.2.1.3 dev wlan0 2>/dev/null || true"


def test_run_dry_run_prints_every_step_of_every_host_and_connects_nowhere(tmp_path):
    exp = tmp_path / "e.yaml"
    exp.write_text(yaml.safe_dump({"name": "e", "repetitions": 2, "flows": [{"segments": 10}],
                                   "variants": [{"name": "reno"}, {"name": "sack", "tcp": {"variant": "sack"}}]}))
    t = time.time()
    r = dry(tmp_path, "run", str(exp), "--out", str(tmp_path / "runs"))
    assert r.returncode == 0, r.stderr
    assert time.time() - t < 60
    assert not (tmp_path / "runs").exists()          # nothing written
    assert r.stdout.count("== ") == 4                 # 2 variants x 2 repetitions
    for name, node in (("pi-a", "A"), ("pi-b", "B"), ("pi-c", "C"), ("pi-d", "D")):
        lines = host_lines(r.stdout, name)
        steps = " ".join(lines)
        assert steps.count("/home/pi/aspan/venv/bin/aspan node --config") == 4
        assert steps.count("kill -s TERM --") == 4
        assert steps.count(f"/{node}.key -> ") == 4   # the experiment key goes up in its own file (MAC on)
        assert steps.count(f"get: /home/pi/aspan/runs/e/<stamp>/reno/rep1/{node}.log") == 1
        assert "python3 -u -c" in steps               # the clock offset measurement
        assert not any(ln.startswith("run: sudo") for ln in lines)   # running nodes needs no root
    assert "[local] node config B: bind 10.2.1.2:7000, peers 10.2.1.1->10.2.1.1:7000" in r.stdout


def test_setup_dry_run_lists_packages_and_the_install_steps(tmp_path):
    r = dry(tmp_path, "setup", "--hosts", "C")
    assert r.returncode == 0, r.stderr
    for pkg in ("python3-venv", "iproute2", "iw", "util-linux"):
        assert pkg in r.stdout
    assert "[local] run: " in r.stdout and "pip wheel" in r.stdout and "pip download" in r.stdout
    c = "\n".join(host_lines(r.stdout, "pi-c"))
    assert "python3 -m venv /home/pi/aspan/venv" in c
    assert "install --quiet --no-index --no-compile --find-links /home/pi/aspan/wheels" in c
    assert host_lines(r.stdout, "pi-a") == []          # --hosts C


def test_status_stop_gather_dry_run(tmp_path):
    for sub, needle in (("status", "node(s)"), ("stop", "kill -s TERM"), ("gather", "find /home/pi/aspan/runs")):
        r = dry(tmp_path, sub)
        assert r.returncode == 0, r.stderr
        if sub != "status":
            assert needle in r.stdout
        assert len(host_lines(r.stdout, "pi-d")) >= 1


# ---- pieces ---------------------------------------------------------------------------
def test_clock_offset_is_the_midpoint_of_the_shortest_round_trip():
    # host clock = orchestrator + 2.0; round trips 0.4 (asymmetric) and 0.01
    s = clock.best_sample([(100.0, 102.3, 100.4), (200.0, 202.005, 200.01)])
    assert s.offset == pytest.approx(2.0) and s.rtt == pytest.approx(0.01) and s.error_bound == pytest.approx(0.005)


def test_node_configs_use_the_host_clock_and_the_mesh_addresses():
    from experiments.schema import load_experiment
    exp = load_experiment({"name": "x", "topology": {"addresses": {"A": "10.9.9.1"}}}, "x.yaml")
    doc = inv_doc(udp_port=7100)
    inv = load_inventory(doc, check_files=False)
    cfg = exp.variants[0].config
    confs = node_configs(cfg, inv, 5, 1000.0, {"A": 0.5, "D": -0.25}, {n: f"/r/{n}" for n in "ABCD"})
    settle, limit = cfg["etx"]["settle_s"], cfg["limits"]["max_duration_s"]
    assert confs["A"]["t0"] == 1000.5 and confs["D"]["t0"] == 999.75 and confs["B"]["t0"] == 1000.0
    assert confs["A"]["deadline"] == 1000.5 + settle + limit + 30
    assert confs["A"]["bind"] == ["10.2.1.1", 7100]
    # packets carry the experiment's addresses; UDP goes to the hosts' mesh addresses
    assert confs["B"]["peers"]["10.9.9.1"] == ["10.2.1.1", 7100]
    assert confs["C"]["log"] == "/r/C/C.log" and confs["C"]["watch_parent"] is False


def test_node_state_parsing():
    assert nodes.NodeState.parse("running\n").state == "running"
    s = nodes.NodeState.parse('done\n{"t":1,"node":"D","ev":"deliver","bytes":4096}\n')
    assert (s.state, s.delivered) == ("done", 4096)
    s = nodes.NodeState.parse("exited 137\n")
    assert s.describe_exit() == "exited with code 137 (killed by signal 9)"
    assert nodes.NodeState.parse("exited unknown\n").describe_exit() == "exited (exit code unknown)"


def test_host_facts_and_pip_platforms():
    out = json.dumps({"python": [3, 11, 2], "impl": "cpython", "machine": "aarch64",
                      "libc": ["glibc", "2.36"], "venv": True}) + "\ntool nohup yes\ntool setsid yes\ntool ip yes\n" \
        "tool iw no\ntool sysctl yes\ntool sudo yes\ntool iptables yes\n"
    f = install.HostFacts.parse(out)
    assert f.platform_key() == "cp311-aarch64-glibc2.36"
    inv = load_inventory(inv_doc(), check_files=False)
    errors, warnings = f.check(inv.hosts[0])
    assert errors == [] and len(warnings) == 1 and "apt-get install iw" in warnings[0]
    no_ipt = install.HostFacts.parse(out.replace("tool iptables yes", "tool iptables no"))
    assert no_ipt.check(inv.hosts[0])[1][1].startswith("iptables missing (apt-get install iptables; needed by run")
    assert "PATH=\"$PATH:/usr/local/sbin:/usr/sbin:/sbin\" command -v $t" in install.probe_command("python3")
    args = install.pip_platform_args(f)
    assert "manylinux_2_36_aarch64" in args and "manylinux2014_aarch64" in args and "linux_aarch64" in args
    assert args[args.index("--abi") + 1] == "cp311"
    old = install.HostFacts((3, 9, 2), "armv7l", ("glibc", "2.31"), True, {"nohup": True, "setsid": False})
    errors, _ = old.check(inv.hosts[0])
    assert any("need >= 3.11" in e for e in errors) and any("util-linux" in e for e in errors)


def test_one_failing_host_is_reported_with_the_results_of_the_others():
    inv = load_inventory(inv_doc(), check_files=False)
    remotes = open_remotes(inv.hosts, dry_run=True, echo=open("/dev/null", "w"))

    def task(r):
        if r.name == "pi-c":
            raise OSError(113, "No route to host")
        return r.name.upper()

    with pytest.raises(GroupException) as e:
        on_hosts(remotes, task)
    assert sorted(v for v in e.value.result.values() if isinstance(v, str)) == ["PI-A", "PI-B", "PI-D"]
    assert failure_lines(e.value, remotes) == ["pi-c (pi@192.0.2.12:22): unreachable: [Errno 113] No route to host"]


def test_a_failed_command_is_described_with_its_output():
    from invoke.exceptions import UnexpectedExit
    from invoke.runners import Result
    err = UnexpectedExit(Result(stdout="", stderr="line1\nip: Operation not permitted\n", exited=2,
                                command="ip link set wlan0 up"))
    assert describe_error(err) == "command failed (exit 2): ip link set wlan0 up: line1 | ip: Operation not permitted"


def test_pi_backend_needs_an_inventory():
    exp = ROOT / "experiments" / "fig4-no-loss.yaml"
    r = subprocess.run([sys.executable, "-m", "experiments", "run", str(exp), "--backend", "pi"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "the pi backend needs --inventory" in r.stderr


def test_an_inventory_without_a_node_of_the_experiment_is_refused(tmp_path):
    doc = inv_doc()
    doc["hosts"] = doc["hosts"][:3]
    p = write_inv(tmp_path, doc)
    r = subprocess.run([sys.executable, "-m", "experiments", "run", str(ROOT / "experiments" / "fig4-no-loss.yaml"),
                        "--inventory", str(p), "--out", str(tmp_path / "runs")],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "no host runs node(s) D" in r.stderr
    assert not (tmp_path / "runs").exists()


def test_the_example_inventory_is_valid():
    inv = load_inventory_file(ROOT / "deploy" / "inventory.example.yaml", check_files=False)
    assert [(h.node, h.mesh_address) for h in inv.hosts] == [("A", "10.2.1.1"), ("B", "10.2.1.2"),
                                                             ("C", "10.2.1.3"), ("D", "10.2.1.4")]
    assert inv.hosts[0].sudo and inv.hosts[0].strict_host_keys and inv.freq == 2412


def test_without_fabric_deploy_says_how_to_install_it(tmp_path):
    code = ("import sys; sys.modules['fabric'] = None; from experiments.cli import main; "
            f"sys.exit(main(['deploy', 'status', '-i', {str(write_inv(tmp_path))!r}]))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "needs Fabric 3: pip install -e '.[pi]'" in r.stderr


def _bash(cmd: str, cwd: Path | None = None, shell: str = "bash") -> str:
    return subprocess.run([shell, "-c", cmd], cwd=cwd, capture_output=True, text=True, timeout=30).stdout


@pytest.mark.parametrize("shell", ["bash", "sh"])
def test_node_shell_plumbing_start_poll_stop_and_stale_pid_files(tmp_path, shell):
    """The start/poll/stop shell of deploy.nodes, run locally: a stale pid file naming some other
    live process (PIDs are reused) is never taken for a node, nor signalled.  In bash (a user's login
    shell) and in sh (what ``sudo -n sh -c`` runs root commands with; dash on Debian and Raspberry Pi OS,
    whose kill takes no ``kill -TERM -- -PGID``)."""
    if shell == "sh" and shutil.which("sh") is None:
        pytest.skip("no sh")
    _sh = functools.partial(_bash, shell=shell)
    work = tmp_path / "work"
    rdir = work / "e" / "stamp" / "v" / "rep0"
    rdir.mkdir(parents=True)
    fake = tmp_path / "aspan"
    fake.write_text("#!/bin/sh\nexec sleep 60\n")
    fake.chmod(0o755)
    other = subprocess.Popen(["sleep", "60"], cwd=ROOT)           # alive, but not a node of ours
    stale = work / "e" / "old" / "v" / "rep0"
    stale.mkdir(parents=True)
    (stale / "B.pid").write_text(f"{other.pid}\n")
    pid = None
    try:
        pid = int(_sh(nodes.start_command(str(fake), str(rdir), "A")).strip())
        assert nodes.NodeState.parse(_sh(nodes.poll_command(str(rdir), "A"))).state == "running"
        assert _sh(nodes.running_nodes_command(str(work))).split() == [str(rdir / "A.pid"), str(pid)]
        out = _sh(nodes.stop_all_command(str(work), grace_s=3)).splitlines()
        assert sorted(out) == sorted([f"{rdir / 'A.pid'} stopped {pid}", f"{stale / 'B.pid'} not-running"])
        assert other.poll() is None                                   # untouched
        st = nodes.NodeState.parse(_sh(nodes.poll_command(str(rdir), "A")))
        assert (st.state, st.exit_code) == ("exited", 143)            # SIGTERM, recorded by the wrapper
        assert _sh(nodes.stop_pidfile_command(str(rdir / "A.pid"))).strip() == "not-running"
    finally:
        other.kill()
        other.wait()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):   # normally stopped by the test already
                os.killpg(pid, signal.SIGKILL)


def test_every_error_of_an_inventory_is_reported_at_once(tmp_path):
    doc = inv_doc()
    doc["defaults"]["port"] = "22"                       # named once, not again for every host
    doc["hosts"][0]["mesh_address"] = "10.2.1.300"
    doc["hosts"][2]["nod"] = "C"
    doc["hosts"][3]["mesh_address"] = "10.2.1.2"         # repeats hosts[1]; hosts[0] is left out
    p = write_inv(tmp_path, doc)
    with pytest.raises(InventoryError) as e:
        load_inventory_file(p, check_files=False)
    assert [err.path for err in e.value.errors] == ["defaults.port", "hosts[0].mesh_address", "hosts[2].nod",
                                                    "hosts[3].mesh_address"]
    assert "repeats hosts[1].mesh_address" in e.value.errors[-1].message
    assert all(str(err).startswith(f"{p}: ") for err in e.value.errors)


def test_node_configs_point_at_the_key_file_only_with_the_mac_on():
    """Issue 13, item 3: the key reaches a Pi in its own file (the config names it, never holds it)."""
    from experiments.build import mac_on
    from experiments.schema import load_experiment
    cfg = load_experiment({"name": "t", "flows": [{"segments": 1}]}).variants[0].config
    assert mac_on(cfg, "pi") and not mac_on(cfg, "local")      # auto: on for the open cell
    inv = load_inventory(inv_doc(), check_files=False)
    rdirs = {n: f"/r/{n}" for n in "ABCD"}
    on = node_configs(cfg, inv, 5, 1000.0, {}, rdirs, auth=True)
    assert on["B"]["auth_key_file"] == "/r/B/B.key"
    assert "auth_key_file" not in node_configs(cfg, inv, 5, 1000.0, {}, rdirs)["B"]


def test_setup_builds_no_build_tool_from_source(tmp_path, monkeypatch):
    """Only netfilterqueue is fetched as source; its build environment's setuptools, wheel and Cython are wheels.

    ``--no-binary=:all:`` also reaches the isolated environment pip builds to read the sdist's
    metadata, and compiled Cython from source there (over 10 minutes on a machine with an empty pip cache).
    """
    ran: list[list[str]] = []
    monkeypatch.setattr(install, "_local", lambda cmd, say, dry_run: ran.append(cmd))
    facts = install.HostFacts((3, 11, 2), "aarch64", ("glibc", "2.36"), True)
    install.download_kernel_sources(tmp_path / "p.whl", facts, tmp_path, lambda s: None, dry_run=True)
    sdist, build_tools = ran
    assert "--no-binary=:all:" not in sdist
    assert sdist[sdist.index("--only-binary=:all:") + 1] == "--no-binary=netfilterqueue"
    assert "--no-deps" in sdist and sdist[-1] == "netfilterqueue>=1.1"
    assert "--only-binary=:all:" in build_tools and not any(a.startswith("--no-binary") for a in build_tools)
    assert {"setuptools>=68", "wheel", "cython"} <= set(build_tools)
    host = load_inventory(inv_doc(), check_files=False).hosts[0]
    on_pi = install.nfq_install_command(host, "netfilterqueue>=1.1")
    # on the Pi, offline, the one sdist is netfilterqueue's, and a wheel of it built by another Pi is taken
    assert "--no-index --find-links" in on_pi and "no-binary" not in on_pi


def test_the_wheel_holds_the_source_tree_as_it_is_not_a_stale_build_lib(tmp_path, monkeypatch):
    """setuptools' build/lib keeps every module it once copied; the wheel for the Pis is built from a clean copy."""
    import zipfile
    tree = tmp_path / "tree"
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for f in files:
        (tree / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, tree / f)
    stale = tree / "build" / "lib" / "routing" / "moved_away_long_ago.py"
    stale.parent.mkdir(parents=True)
    stale.write_text("raise RuntimeError('a module the source tree no longer has')\n")
    monkeypatch.setattr(install, "source_root", lambda: tree)
    out = tmp_path / "out"
    out.mkdir()
    wheel = install.build_wheel(out, lambda s: None)
    names = zipfile.ZipFile(wheel).namelist()
    assert "routing/overlay/node.py" in names and "fieldspec.py" in names
    assert not any("moved_away_long_ago" in n for n in names)
    assert stale.exists()                                   # the user's tree is not touched
