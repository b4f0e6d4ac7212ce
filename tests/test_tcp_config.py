"""TcpConfig defaults and validation."""
from __future__ import annotations

import pytest

from tcp_user.config import TcpConfig


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
