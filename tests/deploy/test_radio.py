"""The Pis' radio settings of a run (issue 24, item 5; deploy/radio.py): the experiment's fields, what
``iw`` says of a radio, the refusal of what it cannot do (before anything changes), and the apply and
restore lines the kernel host plan runs; and the stand-in ``iw`` the virtual Pis use, driven for real.
"""
from __future__ import annotations

import pytest
from deploy import kernel, radio
from deploy.hosts import HostError
from experiments.schema import ExperimentError, load_experiment
from tests.deploy.test_kernel import SNAP_OUT, plan


SOFTMAC_PHY = """Wiphy phy0
\tBand 1:
\t\tCapabilities: 0x1062
\t\tBitrates (non-HT):
\t\t\t* 1.0 Mbps
\t\t\t* 2.0 Mbps (short preamble supported)
\t\t\t* 5.5 Mbps (short preamble supported)
\t\t\t* 11.0 Mbps (short preamble supported)
\t\t\t* 6.0 Mbps
\t\t\t* 54.0 Mbps
\t\tFrequencies:
\t\t\t* 2412.0 MHz [1] (20.0 dBm)
\tRTS threshold: 2347
\tSupported commands:
\t\t * new_interface
\t\t * set_tx_bitrate_mask
\t\t * set_wiphy
"""


FULLMAC_PHY = SOFTMAC_PHY.replace("\t\t * set_tx_bitrate_mask\n", "").replace("\t\tCapabilities: 0x1062\n", "")


DEV_INFO = ["Interface wlan0", "\tifindex 3", "\twiphy 0", "\ttype IBSS", "\ttxpower 31.00 dBm"]


def state(phy=SOFTMAC_PHY):
    return radio.parse_state(DEV_INFO, phy.splitlines())


def test_iw_output_gives_the_phy_the_rates_ht_the_rts_threshold_and_the_commands():
    st = state()
    assert st.phy == "phy0" and st.txpower_dbm == 31.0 and st.rts == "2347" and st.ht
    assert st.bitrates == {"2.4": [1.0, 2.0, 5.5, 11.0, 6.0, 54.0]}
    assert st.commands == ["new_interface", "set_tx_bitrate_mask", "set_wiphy"]
    full = state(FULLMAC_PHY)
    assert not full.ht and radio.BITRATE_COMMAND not in full.commands


@pytest.mark.parametrize("settings, why", [
    ({"bitrate_mbps": 48}, "not a rate of its 2.4 GHz band (1, 2, 5.5, 11, 6, 54)"),
    ({"mcs": 7}, None),
    ({"rts_threshold": 500, "txpower_dbm": 10}, None),
])
def test_what_a_softmac_radio_can_do(settings, why):
    p = radio.plan(settings, "wlan0", 2412)
    assert radio.problems(p, state()) == ([f"wlan0: pi.bitrate_mbps 48 is {why}"] if why else [])


def test_a_fullmac_radio_is_refused_a_fixed_rate_with_the_reason():
    [why] = radio.problems(radio.plan({"bitrate_mbps": 54}, "wlan0", 2412), state(FULLMAC_PHY))
    assert "set_tx_bitrate_mask" in why and "brcmfmac" in why
    assert any("HT" in w for w in radio.problems(radio.plan({"mcs": 3}, "wlan0", 2412), state(FULLMAC_PHY)))
    assert radio.problems(radio.plan({"rts_threshold": 0}, "wlan0", 2412), state(FULLMAC_PHY)) == []


def test_apply_and_restore_lines():
    p = radio.plan({"mcs": 5, "rts_threshold": 0, "txpower_dbm": 12.5}, "wlan0", 5180)
    st = state()
    assert radio.apply_lines(p, st) == ["iw dev wlan0 set bitrates ht-mcs-5 5", "iw phy phy0 set rts 0",
                                        "iw dev wlan0 set txpower fixed 1250"]
    assert radio.restore_lines(p, st) == ["try iw dev wlan0 set bitrates", "try iw phy phy0 set rts 2347",
                                          "try iw dev wlan0 set txpower auto"]
    assert radio.apply_lines(radio.plan({"bitrate_mbps": 5.5}, "wlan0", 2412), st) == \
        ["iw dev wlan0 set bitrates legacy-2.4 5.5"]
    assert radio.plan({}, "wlan0", 2412).empty and radio.apply_lines(radio.plan({}, "wlan0", 2412), st) == []


def snap_out(phy: str) -> str:
    return SNAP_OUT.replace("@@save", "@@radio\n" + "\n".join(DEV_INFO) + "\n@@phy\n" + phy + "@@save")


def test_the_kernel_host_plan_carries_the_radio_and_refuses_before_anything_changes():
    hp = plan()
    hp.radio = radio.plan({"bitrate_mbps": 54, "rts_threshold": 500}, "wlan0", 2412)
    assert "@@radio" in kernel.snapshot_command(hp, "/home/pi/aspan")
    s = kernel.parse_snapshot(snap_out(SOFTMAC_PHY), hp, "/home/pi/aspan")
    assert s.radio is not None and s.radio.rts == "2347"
    a = kernel.apply_script(hp, s)
    assert a.rstrip().endswith("iw dev wlan0 set bitrates legacy-2.4 54\niw phy phy0 set rts 500")
    r = kernel.restore_script(hp, s, "/home/pi/aspan")
    assert "try iw dev wlan0 set bitrates\ntry iw phy phy0 set rts 2347\n" in r
    with pytest.raises(HostError, match="set_tx_bitrate_mask"):
        kernel.parse_snapshot(snap_out(FULLMAC_PHY), hp, "/home/pi/aspan")
    after = kernel.parse_snapshot(snap_out(SOFTMAC_PHY.replace("RTS threshold: 2347", "RTS threshold: 500")),
                                  hp, "/home/pi/aspan")
    assert "the RTS threshold differs: 2347 -> 500" in kernel.compare(s, after)
    assert "@@radio" not in kernel.snapshot_command(plan(), "/home/pi/aspan")     # no radio setting: not read


def exp(pi):
    return load_experiment({"name": "r", "backend": "pi", "pi": pi, "flows": [{"sender": "A", "receiver": "D"}]},
                           "r.yaml")


def test_the_experiment_fields_are_checked_before_anything_starts():
    cfg = exp({"mcs": 7, "rts_threshold": 0, "txpower_dbm": 15}).variants[0].config
    assert cfg["pi"]["mcs"] == 7 and cfg["pi"]["bitrate_mbps"] is None
    with pytest.raises(ExperimentError, match=r"pi\.bitrate_mbps.*802.11a/b/g rates 1, 2, 5.5, 6"):
        exp({"bitrate_mbps": 50})
    with pytest.raises(ExperimentError, match=r"pi\.mcs.*<= 7"):
        exp({"mcs": 8})
    with pytest.raises(ExperimentError, match=r"pi\.mcs: give a fixed legacy bitrate"):
        exp({"bitrate_mbps": 54, "mcs": 3})
    with pytest.raises(ExperimentError, match=r"pi\.txpower_dbm"):
        exp({"txpower_dbm": 40})
