"""Issue 27, item 4, without root or hosts: how the run's key reaches the kernel data plane's node daemons
(netns and the Pis' ``pi.data_plane: kernel``), and what their ``node_stop`` counts.
"""
import json
import stat
from types import SimpleNamespace
from deploy.inventory import load_inventory
from experiments.backends import pi_kernel
from experiments.backends.netns.node import all_drops, probe_auth
from experiments.build import write_key
from experiments.schema import load_experiment
from routing.forwarding.step import DROP_REASONS
from routing.overlay.wire import PROBE, Packet, Probe
from tests.deploy.test_kernel import INV


KEY = bytes(range(32))


def test_the_netns_daemon_reads_its_key_once_and_deletes_it(tmp_path):
    path = write_key(tmp_path / "B.key", KEY)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    auth = probe_auth({"auth_key_file": str(path)}, "10.2.1.2", ["10.2.1.1", "10.2.1.3"])
    assert auth is not None and not path.exists()
    assert probe_auth({}, "10.2.1.2", ["10.2.1.1"]) is None            # auth.mac off: no key file named
    # the key read is the run's: what a neighbour sealed with it opens
    from routing.overlay.auth import MeshAuth
    sealed = MeshAuth(KEY, "10.2.1.1", ["10.2.1.2"], 1).seal(
        Packet(PROBE, "10.2.1.1", 7700, "10.2.1.2", 7700, probe=Probe(1, 1.0)), "10.2.1.2")
    assert auth.open(sealed, "10.2.1.1").probe == Probe(1, 1.0)


def test_node_stop_drops_hold_the_probe_sockets_share():
    probe = {"stranger": 3, "forged": 5, "replay": 1, "malformed": 2}
    both = all_drops({**dict.fromkeys(DROP_REASONS, 0), "loss": 7, "malformed": 1}, probe)
    assert both["forged"] == 5 and both["malformed"] == 3 and both["loss"] == 7 and set(both) == set(DROP_REASONS)
    assert all_drops(None, probe)["stranger"] == 3          # handlers accept/kernel: no forwarding step


class FakeRemote:
    """What start_process needs of a deploy.hosts.Remote, recording the uploads."""

    def __init__(self):
        self.host = SimpleNamespace(venv="/v")
        self.dry_run = False
        self.puts = []

    def put(self, local, remote):
        self.puts.append((remote, open(local, "rb").read()))

    def run(self, cmd, root=False):
        return SimpleNamespace(stdout="4242\n")


def test_the_pis_kernel_daemons_get_the_key_beside_their_config_only_with_the_mac_on(tmp_path):
    inv = load_inventory(INV, check_files=False)
    exp = load_experiment({"name": "k", "pi": {"data_plane": "kernel"}, "flows": [{"segments": 1}]})
    cfg = pi_kernel.kernel_config(exp.variants[0].config, inv)
    plan = pi_kernel.plan_for(cfg)
    on = pi_kernel.node_config(cfg, plan, "B", 1, 1000.0, "/r/B", "pi-b", "wlan0", auth=True)
    assert on["auth_key_file"] == "/r/B/B.key"
    assert "auth_key_file" not in pi_kernel.node_config(cfg, plan, "B", 1, 1000.0, "/r/B", "pi-b", "wlan0")
    r = FakeRemote()
    key = write_key(tmp_path / "B.key", KEY)
    assert pi_kernel.start_process(r, "/r/B", "B.node", pi_kernel.NODE_MODULE, on, tmp_path / "B.node.json",
                                   key) == 4242
    assert r.puts[0] == ("/r/B/B.key", KEY.hex().encode())          # the key first, in its own file
    config = dict(r.puts)["/r/B/B.node.json"]
    assert KEY.hex().encode() not in config and json.loads(config)["auth_key_file"] == "/r/B/B.key"


def test_stopping_the_pis_kernel_processes_deletes_a_key_no_daemon_read(tmp_path):
    """A daemon that died before it read its key leaves the file: the stop command deletes it (run here in
    a shell, on a directory standing in for the Pi's run directory, no process to stop)."""
    import subprocess
    (tmp_path / "B.key").write_text(KEY.hex())
    (tmp_path / "B.node.json").write_text("{}")
    out = subprocess.run(["bash", "-c", pi_kernel.stop_command(str(tmp_path), ["B.node"])], capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 0 and out.stdout.startswith("B.node not-running"), out
    assert not (tmp_path / "B.key").exists() and (tmp_path / "B.node.json").exists()
