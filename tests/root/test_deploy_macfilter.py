"""The MAC filter that puts the experiment's graph in force on a desk of Pis (deploy.macfilter), without a host:
the rules per node of a graph, the MAC address read with the snapshot, the counters, the arming of every host
(with fake remotes), and what --dry-run prints for both data planes.  On virtual Pis: tests/root/test_deploy_vpi.py.
"""
import subprocess
import pytest
from deploy import macfilter
from tests.deploy.test_macfilter import DIAMOND, MACS


def test_the_allow_list_drops_a_device_outside_the_inventory_and_passes_the_neighbours(tmp_path):
    """The rule, applied with iptables-legacy in a namespace of this test's own (root): a frame from a MAC
    no neighbour has is dropped and counted as a stranger's; one from a neighbour passes."""
    import os
    import shutil
    import uuid
    if os.geteuid() != 0 or shutil.which("iptables-legacy") is None:
        pytest.skip("needs root and iptables-legacy")
    ns = f"aspan-mf-{uuid.uuid4().hex[:6]}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        def run(*a, check=True):
            return subprocess.run(["ip", "netns", "exec", ns, *a], capture_output=True, text=True, check=check)
        run("ip", "link", "add", "wlan0", "type", "veth", "peer", "name", "peer0")
        run("ip", "link", "set", "wlan0", "address", "02:00:00:00:00:01")
        run("ip", "link", "set", "peer0", "address", "02:00:00:00:00:0f")      # not in the inventory
        for dev in ("wlan0", "peer0", "lo"):
            run("ip", "link", "set", dev, "up")
        run("ip", "addr", "add", "10.2.1.1/24", "dev", "wlan0")
        run("ip", "addr", "add", "10.2.1.9/24", "dev", "peer0")
        rule = macfilter.stranger_rule(DIAMOND, "A", "wlan0", MACS)
        run("iptables-legacy", "-t", "raw", "-A", "PREROUTING", *rule.split())
        # a frame from peer0 (MAC ...0f) into wlan0: an ARP request first (not IPv4: it passes), then the ping
        run("ip", "neigh", "add", "10.2.1.1", "lladdr", "02:00:00:00:00:01", "dev", "peer0")
        run("ping", "-c", "2", "-W", "1", "-I", "peer0", "10.2.1.1", check=False)
        listing = run("iptables-legacy", "-t", "raw", "-L", "PREROUTING", "-v", "-x", "-n").stdout
        assert macfilter.parse_stranger_drops(listing) >= 2, listing
        run("iptables-legacy", "-t", "raw", "-Z")
        run("ip", "link", "set", "peer0", "address", MACS["B"])                  # now it is neighbour B
        run("ip", "neigh", "flush", "dev", "peer0")
        run("ip", "neigh", "add", "10.2.1.1", "lladdr", "02:00:00:00:00:01", "dev", "peer0")
        run("ping", "-c", "2", "-W", "1", "-I", "peer0", "10.2.1.1", check=False)
        listing = run("iptables-legacy", "-t", "raw", "-L", "PREROUTING", "-v", "-x", "-n").stdout
        assert macfilter.parse_stranger_drops(listing) == 0, listing
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
