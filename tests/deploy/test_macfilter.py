"""The MAC filter that puts the experiment's graph in force on a desk of Pis (deploy.macfilter), without a host:
the rules per node of a graph, the MAC address read with the snapshot, the counters, the arming of every host
(with fake remotes), and what --dry-run prints for both data planes.  On virtual Pis: tests/root/test_deploy_vpi.py.
"""
from tests import ROOT
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
import pytest
import yaml
from deploy import kernel, macfilter
from deploy.hosts import HostError
from experiments.backends import pi_common
from experiments.schema import ExperimentError
from routing.topology.graph import MeshGraph




DIAMOND = MeshGraph.build("ABCD", [("A", "B"), ("B", "D"), ("A", "C"), ("C", "D")])


MACS = {n: f"02:00:00:00:00:0{i + 1}" for i, n in enumerate("ABCD")}


SNAP = """@@version
iptables v1.8.9 (nf_tables)
@@sysctl
@@offload
@@mac
{mac}
@@save
*filter
:INPUT ACCEPT [0:0]
-A INPUT -p tcp -m tcp --dport 9 -j ACCEPT
COMMIT
@@routes
10.2.1.0/24 dev wlan0 proto kernel scope link src 10.2.1.1
@@restore
"""


def overlay_plan() -> kernel.HostPlan:
    return kernel.HostPlan("wlan0", "10.2.1.1", {}, [], 0, [], offloads_off=())


def test_each_node_drops_exactly_its_non_neighbours():
    assert {n: macfilter.non_neighbours(DIAMOND, n) for n in "ABCD"} == {"A": ["D"], "B": ["C"], "C": ["B"], "D": ["A"]}
    assert macfilter.drop_rules(DIAMOND, "A", "wlan0", MACS) == [
        ("raw", "PREROUTING", "-i wlan0 -m mac --mac-source 02:00:00:00:00:04 -j DROP"),
        ("raw", "PREROUTING", "-i wlan0 -m mac ! --mac-source 02:00:00:00:00:02 -m mac ! --mac-source "
                              "02:00:00:00:00:03 -j DROP")]               # the allow list: B and C only
    chain = MeshGraph.chain("ABCD")
    assert [r[2].split()[5] for r in macfilter.drop_rules(chain, "B", "wlan0", MACS)[:-1]] == ["02:00:00:00:00:04"]
    assert macfilter.non_neighbours(chain, "A") == ["C", "D"]
    full = MeshGraph.build("ABC", [("A", "B"), ("B", "C"), ("A", "C")])
    assert [r[2] for r in macfilter.drop_rules(full, "A", "wlan0", MACS)] == [   # every node hears every node
        "-i wlan0 -m mac ! --mac-source 02:00:00:00:00:02 -m mac ! --mac-source 02:00:00:00:00:03 -j DROP"]


def test_the_snapshot_reads_the_mesh_mac_and_names_a_missing_interface():
    s = kernel.parse_snapshot(SNAP.format(mac="02:AB:cd:00:11:22"), overlay_plan(), "/home/pi/aspan")
    assert s.mac == "02:ab:cd:00:11:22"
    cmd = kernel.snapshot_command(overlay_plan(), "/x")
    assert "cat /sys/class/net/wlan0/address" in cmd
    assert subprocess.run(["sh", "-n", "-c", cmd]).returncode == 0             # no sysctl: still valid shell
    with pytest.raises(HostError, match=r"no MAC address for the mesh interface wlan0 .*No such file.*iface"):
        kernel.parse_snapshot(SNAP.format(mac="cat: /sys/class/net/wlan0/address: No such file or directory"),
                              overlay_plan(), "/x")
    with pytest.raises(HostError, match="no hardware address"):
        kernel.parse_snapshot(SNAP.format(mac="00:00:00:00:00:00"), overlay_plan(), "/x")


def test_two_hosts_with_one_mac_are_refused():
    assert macfilter.check_distinct(MACS) == []
    same = macfilter.check_distinct({**MACS, "C": MACS["A"]})
    assert same == ["nodes A and C have the same mesh MAC address 02:00:00:00:00:01: the filter cannot tell them apart"]


def test_drop_counters_are_read_per_sending_node():
    listing = """Chain ASPAN-PREROUTING (1 references)
    pkts      bytes target     prot opt in     out     source               destination
      12      840 DROP       0    --  wlan0  *       0.0.0.0/0            0.0.0.0/0            MAC 02:00:00:00:00:04
       3      180 DROP       0    --  wlan0  *       0.0.0.0/0            0.0.0.0/0            statistic mode random probability 0.005
"""
    assert macfilter.parse_drops(listing, MACS) == {"D": 12}
    assert macfilter.parse_drops(listing.replace("02:00:00:00:00:04", "02:00:00:00:00:0A"), MACS) == {}
    assert macfilter.parse_drops("", MACS) == {}
    strangers = listing + ("       5      300 DROP       0    --  wlan0  *       0.0.0.0/0            0.0.0.0/0"
                           "            MAC ! 02:00:00:00:00:02 MAC ! 02:00:00:00:00:03\n")
    assert macfilter.parse_stranger_drops(strangers) == 5 and macfilter.parse_drops(strangers, MACS) == {"D": 12}


def test_the_filter_goes_first_in_our_raw_chain_and_the_restore_removes_it():
    s = kernel.parse_snapshot(SNAP.format(mac=MACS["A"]), overlay_plan(), "/home/pi/aspan")
    plan = overlay_plan()
    plan.rules = macfilter.drop_rules(DIAMOND, "A", "wlan0", MACS) + [
        ("raw", "PREROUTING", "-i wlan0 -m statistic --mode random --probability 0.005000 -j DROP")]
    a = kernel.apply_script(plan, s)
    assert a.splitlines()[1:] == [
        "iptables-nft -t raw -N ASPAN-PREROUTING",
        "iptables-nft -t raw -A ASPAN-PREROUTING -i wlan0 -m mac --mac-source 02:00:00:00:00:04 -j DROP",
        "iptables-nft -t raw -A ASPAN-PREROUTING -i wlan0 -m mac ! --mac-source 02:00:00:00:00:02 -m mac ! "
        "--mac-source 02:00:00:00:00:03 -j DROP",
        "iptables-nft -t raw -A ASPAN-PREROUTING -i wlan0 -m statistic --mode random --probability 0.005000 -j DROP",
        "iptables-nft -t raw -I PREROUTING 1 -j ASPAN-PREROUTING"]                   # no sysctl, route, offload
    r = kernel.restore_script(plan, s, "/home/pi/aspan")
    assert "-D PREROUTING -j ASPAN-PREROUTING" in r and "-X ASPAN-PREROUTING" in r and "kill" not in r


class FakeRemote:
    """Enough of deploy.hosts.Remote for arm_hosts/restore_hosts: canned snapshot output, recorded commands."""

    def __init__(self, node: str, mac: str, tmp: Path) -> None:
        self.host = SimpleNamespace(node=node, name=f"pi-{node.lower()}", iface="wlan0", install_dir="/home/pi/aspan",
                                    label=lambda: f"pi-{node.lower()} (pi@h:22)")
        self.name = self.host.name
        self.conn = object()
        self.dry_run = False
        self.mac = mac
        self.tmp = tmp
        self.calls: list[tuple[str, bool]] = []
        self.uploads: dict[str, str] = {}

    def run(self, cmd: str, root: bool = False, **kw):
        self.calls.append((cmd, root))
        out = SNAP.format(mac=self.mac) if cmd.startswith("echo '@@version'") else ""
        return SimpleNamespace(stdout=out)

    def put(self, local, remote: str) -> None:
        self.uploads[remote] = Path(local).read_text()


def test_arm_hosts_reads_every_mac_then_applies_each_hosts_filter_as_root(tmp_path):
    remotes = [FakeRemote(n, MACS[n], tmp_path) for n in "ABCD"]
    plans = {n: overlay_plan() for n in "ABCD"}
    snaps, armed, meta = {}, [], {}
    pi_common.arm_hosts(remotes, plans, DIAMOND, tmp_path, snaps, armed, meta)
    assert meta["mac_filter"] == {"macs": MACS, "drop_from": {"A": ["D"], "B": ["C"], "C": ["B"], "D": ["A"]}}
    assert meta["iptables"] == {n: "nft" for n in "ABCD"}
    assert sorted(r.host.node for r in armed) == list("ABCD")
    opposite = {"A": "D", "B": "C", "C": "B", "D": "A"}
    for r in remotes:
        assert "/home/pi/aspan/kernel-restore.sh" in r.uploads                  # before the apply
        apply, root = r.calls[-1]
        assert root and f"--mac-source {MACS[opposite[r.host.node]]} -j DROP" in apply
        assert apply.count(" --mac-source") == 3                        # the one non-neighbour, two neighbours
        nbrs = [m for m in "ABCD" if m not in (r.host.node, opposite[r.host.node])]
        assert "! --mac-source " + " -m mac ! --mac-source ".join(MACS[m] for m in nbrs) + " -j DROP" in apply
    assert all(root for r in remotes for _, root in r.calls)                  # snapshot and apply: root


def test_arm_hosts_refuses_hosts_sharing_a_mac_before_changing_anything(tmp_path):
    remotes = [FakeRemote(n, MACS["A" if n == "C" else n], tmp_path) for n in "ABCD"]
    with pytest.raises(pi_common.RunFailed, match="nodes A and C have the same mesh MAC"):
        pi_common.arm_hosts(remotes, {n: overlay_plan() for n in "ABCD"}, DIAMOND, tmp_path, {}, [], {})
    assert all(not r.uploads and len(r.calls) == 1 for r in remotes)          # only the snapshot ran


def test_a_topology_without_links_is_refused_by_the_pi_backend():
    with pytest.raises(ExperimentError, match="topology.links"):
        pi_common.experiment_graph(SimpleNamespace(topology=SimpleNamespace(nodes=("A", "B"), links=None)))
    links = tuple(tuple(p) for p in DIAMOND.links)     # the config's sections read by attribute (experiments/config.py)
    assert pi_common.experiment_graph(SimpleNamespace(topology=SimpleNamespace(nodes=tuple("ABCD"), links=links))) \
        == DIAMOND


def diamond_dry_run(tmp_path: Path, data_plane: str, **inv_top) -> subprocess.CompletedProcess:
    """``aspan deploy run --dry-run`` of a diamond on four Pis (``inv_top``: top-level inventory fields)."""
    inv = {**inv_top, "defaults": {"user": "pi", "iface": "wlan0", "install_dir": "/home/pi/aspan"},
           "hosts": [{"name": f"pi-{n.lower()}", "node": n, "host": f"192.0.2.{10 + i}", "mesh_address": f"10.2.1.{i + 1}"}
                     for i, n in enumerate("ABCD")]}
    (tmp_path / "inv.yaml").write_text(yaml.safe_dump(inv))
    exp = {"name": "d", "pi": {"data_plane": data_plane}, "repetitions": 1,
           "topology": {"links": [["A", "B"], ["B", "D"], ["A", "C"], ["C", "D"]]},
           "flows": [{"sender": "A", "receiver": "D", "segments": 10}], "variants": [{"name": "sack",
                                                                                      "tcp": {"variant": "sack"}}]}
    (tmp_path / "d.yaml").write_text(yaml.safe_dump(exp))
    return subprocess.run([sys.executable, "-m", "experiments", "deploy", "run", str(tmp_path / "d.yaml"), "-i",
                           str(tmp_path / "inv.yaml"), "--dry-run"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("data_plane", ["udp", "kernel"])
def test_dry_run_shows_each_pis_filter_for_a_diamond(tmp_path, data_plane):
    r = diamond_dry_run(tmp_path, data_plane)
    assert r.returncode == 0, r.stdout + r.stderr
    for node, other in (("a", "D"), ("b", "C"), ("c", "B"), ("d", "A")):
        assert (f"[pi-{node}] apply: iptables-<nft|legacy, from iptables -V> -t raw -A ASPAN-PREROUTING -i wlan0 "
                f"-m mac --mac-source <{other}:wlan0:MAC> -j DROP") in r.stdout
        assert r.stdout.count(f"[pi-{node}] apply: iptables-<nft|legacy, from iptables -V> -t raw -A") == 2
        assert f"[pi-{node}] apply: iptables-<nft|legacy, from iptables -V> -t raw -A ASPAN-PREROUTING -i wlan0 " \
               f"-m mac ! --mac-source <" in r.stdout                         # the allow list


def test_arm_hosts_without_the_mac_filter_snapshots_and_restores_but_adds_no_rule(tmp_path):
    remotes = [FakeRemote(n, MACS[n], tmp_path) for n in "ABCD"]
    meta: dict = {}
    pi_common.arm_hosts(remotes, {n: overlay_plan() for n in "ABCD"}, DIAMOND, tmp_path, {}, [], meta,
                        mac_filter=False)
    assert meta["mac_filter"] is None and meta["iptables"] == {n: "nft" for n in "ABCD"}
    assert all("--mac-source" not in cmd for r in remotes for cmd, _ in r.calls)


@pytest.mark.parametrize("data_plane", ["udp", "kernel"])
def test_graph_filter_none_puts_no_mac_rule_on_any_pi(tmp_path, data_plane):
    """Inventory ``graph_filter: none``: the overlay touches no host state (no snapshot, no iptables), the
    kernel plane keeps its own rules; a wrong value is refused naming the field."""
    r = diamond_dry_run(tmp_path, data_plane, graph_filter="none")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "--mac-source" not in r.stdout
    if data_plane == "udp":
        assert "apply:" not in r.stdout and "@@version" not in r.stdout
    else:
        assert "apply: iptables-<nft|legacy, from iptables -V>" in r.stdout      # NFQUEUE rules stay
    r = diamond_dry_run(tmp_path, data_plane, graph_filter="ebtables")
    assert r.returncode != 0 and "graph_filter" in r.stderr + r.stdout and "mac, none" in r.stderr + r.stdout
