"""tcp_user/config.py: TcpConfig's defaults, and each knob's range at its edges with the error naming knob
and value (issue 30, item 3).
"""
from __future__ import annotations

import re
import pytest
import tcp_user.config as tcp_config
from tcp_user.config import TcpConfig


# ====================================================================================================
# Rules of the settings and small drivers the mutation run covers (issue 30, item 3): the snoop schemes'
# registry and settings (aspan/schemes.py, aspan/scheme_config.py), the TCP settings (tcp_user/config.py),
# the bulk application (tcp_user/bulk.py) and the prober's timing (etx/drivers/prober.py).  Each test names the
# rule it pins.

# ---- tcp_user/config.py: each knob's range, at its edges, and the error naming knob and value -----------
@pytest.mark.parametrize("name, lowest, highest", [
    ("mss", 1, 0xFFFF),                    # a segment carries at least one byte; the MSS option is 16 bits
    ("init_cwnd", 1, None),
    ("rcv_buffer", 1, (1 << 32) - 1),      # the window is a 32-bit quantity once scaled
    ("dupack_threshold", 1, None),
    ("init_ssthresh", 1, None),
    ("max_retries", 0, None),              # 0: never abort
    ("snack_threshold", 1, None),          # paper 002: reports of a loss before it is resent
])
def test_integer_knobs_take_their_edges_and_refuse_one_past_them_naming_knob_and_value(name, lowest, highest):
    assert getattr(TcpConfig(**{name: lowest}), name) == lowest
    bound = f">= {lowest}" if highest is None else f"in [{lowest}, {highest}]"
    with pytest.raises(ValueError, match=re.escape(f"{name}: must be {bound}, got {lowest - 1}")):
        TcpConfig(**{name: lowest - 1})
    if highest is not None:
        assert getattr(TcpConfig(**{name: highest}), name) == highest
        with pytest.raises(ValueError, match=re.escape(f"{name}: must be {bound}, got {highest + 1}")):
            TcpConfig(**{name: highest + 1})
    with pytest.raises(ValueError, match=re.escape(f"{name}: must be an int, got True")):
        TcpConfig(**{name: True})


def test_the_timers_edges():
    """RFC 6298's bounds: each RTO a positive number, the minimum not above the maximum (equal is a fixed
    RTO); TIME_WAIT at least 0; RFC 1122 sec. 4.2.3.2's delayed-ACK timeout in (0, 0.5]."""
    assert TcpConfig(min_rto=5.0, max_rto=5.0).min_rto == 5.0
    with pytest.raises(ValueError, match=re.escape("min_rto: 5.5 exceeds max_rto 5.0")):
        TcpConfig(min_rto=5.5, max_rto=5.0)
    assert TcpConfig(time_wait=0).time_wait == 0
    with pytest.raises(ValueError, match=re.escape("time_wait: must be a number >= 0, got -0.001")):
        TcpConfig(time_wait=-0.001)
    with pytest.raises(ValueError, match=re.escape("time_wait: must be a number >= 0, got True")):
        TcpConfig(time_wait=True)
    assert TcpConfig(delack_s=0.5).delack_s == 0.5
    for bad in (0, 0.0, 0.5001, True, "0.2"):
        with pytest.raises(ValueError, match=re.escape(f"delack_s: must be in (0, 0.5] (RFC 1122 sec. 4.2.3.2), "
                                                       f"got {bad!r}")):
            TcpConfig(delack_s=bad)


def test_variants_lists_the_congestion_registry_and_other_names_are_not_attributes():
    from tcp_user.congestion import CONGESTION_CONTROLS
    assert tcp_config.VARIANTS == tuple(CONGESTION_CONTROLS) and "sack" in tcp_config.VARIANTS
    with pytest.raises(AttributeError, match=re.escape("module 'tcp_user.config' has no attribute 'variants'")):
        tcp_config.variants  # noqa: B018


# ====================================================================================================
# TcpConfig defaults and validation.


def test_defaults() -> None:
    c = TcpConfig()
    assert (c.variant, c.mss, c.init_cwnd, c.rcv_buffer) == ("reno", 1000, 2, 64_000)
    assert (c.min_rto, c.max_rto, c.initial_rto, c.dupack_threshold) == (0.2, 60.0, 1.0, 3)
    assert c.init_ssthresh == 1 << 30 and c.time_wait == 1.0
    assert not c.limited_transmit and not c.rack and not c.reno_rto_guard   # opt-in (docs/REPRODUCTION.md)
    assert TcpConfig(variant="sack").variant == "sack"


@pytest.mark.parametrize("field,value", [
    ("variant", "newreno"), ("variant", "SACK"),
    ("mss", 0), ("mss", -5), ("mss", 1.5), ("mss", True), ("mss", 70_000),
    ("init_cwnd", 0), ("rcv_buffer", 0), ("rcv_buffer", 2**32),
    ("min_rto", 0), ("max_rto", -1.0), ("initial_rto", 0.0), ("initial_rto", "1"),
    ("dupack_threshold", 0), ("init_ssthresh", 0), ("time_wait", -0.1),
    ("max_retries", -1), ("limited_transmit", 1), ("reno_rto_guard", "yes"),
])
def test_bad_values_name_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"^{field}"):
        TcpConfig(**{field: value})


def test_min_rto_above_max_rto() -> None:
    with pytest.raises(ValueError, match="min_rto"):
        TcpConfig(min_rto=5.0, max_rto=1.0)


@pytest.mark.parametrize("name", ["newreno", "frto"])
def test_the_newreno_and_frto_knobs_are_off_by_default_and_bools(name):
    assert getattr(TcpConfig(), name) is False and getattr(TcpConfig(**{name: True}), name) is True
    with pytest.raises(ValueError, match=re.escape(f"{name}: must be a bool, got 1")):
        TcpConfig(**{name: 1})
