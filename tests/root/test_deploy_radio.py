"""The Pis' radio settings of a run (issue 24, item 5; deploy/radio.py): the experiment's fields, what
``iw`` says of a radio, the refusal of what it cannot do (before anything changes), and the apply and
restore lines the kernel host plan runs; and the stand-in ``iw`` the virtual Pis use, driven for real.
"""
from __future__ import annotations

from tests import DATA
import shutil
import subprocess
import uuid
import pytest
from deploy import radio


@pytest.mark.skipif(shutil.which("ip") is None, reason="needs ip")
def test_the_stand_in_iw_keeps_what_the_apply_and_restore_lines_set(tmp_path):
    """The lines above run against tests/data/fake_iw on a veth in a namespace of this test's own
    (root): the state it keeps after the apply, and after the restore, is the state before."""
    import os
    if os.geteuid() != 0:
        pytest.skip("needs root (a network namespace)")
    fake = tmp_path / "iw"
    fake.write_bytes((DATA / "fake_iw").read_bytes())
    fake.chmod(0o755)
    ns = f"aspan-radio-{uuid.uuid4().hex[:6]}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "-n", ns, "link", "add", "wlan0", "type", "veth", "peer", "name", "wlan1"], check=True)

        def sh(script: str) -> str:
            return subprocess.run(["ip", "netns", "exec", ns, "sh", "-c",
                                   f"PATH={tmp_path}:$PATH; try() {{ \"$@\"; }}; {script}"],
                                  capture_output=True, text=True, check=True).stdout
        before = radio.parse_state(sh("iw dev wlan0 info").splitlines(), sh("iw phy phy0 info").splitlines())
        p = radio.plan({"bitrate_mbps": 54, "rts_threshold": 500, "txpower_dbm": 10}, "wlan0", 2412)
        assert radio.problems(p, before) == []
        sh("; ".join(radio.apply_lines(p, before)))
        mid = radio.parse_state(sh("iw dev wlan0 info").splitlines(), sh("iw phy phy0 info").splitlines())
        assert (mid.rts, mid.txpower_dbm) == ("500", 10.0)
        assert (tmp_path / "wlan0.bitrates").read_text().strip() == "legacy-2.4 54"
        sh("; ".join(radio.restore_lines(p, before)))
        after = radio.parse_state(sh("iw dev wlan0 info").splitlines(), sh("iw phy phy0 info").splitlines())
        assert (after.rts, after.txpower_dbm) == (before.rts, before.txpower_dbm)
        assert (tmp_path / "wlan0.bitrates").read_text().strip() == ""
        (tmp_path / "fullmac").touch()                                  # now a FullMAC radio: refused
        full = radio.parse_state(sh("iw dev wlan0 info").splitlines(), sh("iw phy phy0 info").splitlines())
        assert any("set_tx_bitrate_mask" in w for w in radio.problems(p, full))
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
