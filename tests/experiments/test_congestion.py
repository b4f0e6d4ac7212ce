"""experiments/congestion.py: which kernel congestion controls a run may name, refused where the kernel lacks one."""
from __future__ import annotations

import struct

import pytest

from experiments.congestion import KERNEL_CONGESTION, kernel_has, module_names, refuse_congestion
from experiments.runner import check_backend_support
from experiments.schema import ExperimentError, load_experiment


def exp(congestion: str) -> object:
    return load_experiment({"backend": "netns", "netns": {"congestion": congestion},
                            "flows": [{"sender": "A", "receiver": "D", "segments": 10}]}, "cc.yaml")


def variants(e: object) -> list[tuple[str, object]]:
    return [(v.name, v.config) for v in e.variants]  # type: ignore[attr-defined]


def test_the_schema_takes_reno_cubic_and_bbr_and_names_them_otherwise():
    assert KERNEL_CONGESTION == ("reno", "cubic", "bbr")
    assert exp("bbr").variants[0].config.netns.congestion == "bbr"  # type: ignore[attr-defined]
    with pytest.raises(ExperimentError, match=r"netns.congestion: expected one of reno, cubic, bbr, got 'vegas'"):
        exp("vegas")


def test_a_control_counts_when_listed_or_present_as_a_module():
    assert kernel_has("bbr", "reno cubic bbr\n", set())
    assert kernel_has("bbr", "reno cubic\n", {"tcp_bbr"})          # loaded by the first setsockopt as root
    assert not kernel_has("bbr", "reno cubic\n", {"tcp_cubic", "tcp_bbr2"})
    assert not kernel_has("cubic", "reno bbr", set())


def test_module_names_reads_the_modules_tree_and_the_builtin_list(tmp_path):
    base = tmp_path / "6.1.0-test" / "kernel" / "net" / "ipv4"
    base.mkdir(parents=True)
    (base / "tcp_bbr.ko.xz").write_bytes(b"")
    (base / "tcp_vegas.ko").write_bytes(b"")
    (tmp_path / "6.1.0-test" / "modules.builtin").write_text("kernel/net/ipv4/tcp_cubic.ko\nkernel/fs/ext4/ext4.ko\n")
    assert module_names("6.1.0-test", tmp_path) == {"tcp_bbr", "tcp_vegas", "tcp_cubic", "ext4"}
    assert module_names("no-such-release", tmp_path) == set()


def test_netns_refuses_a_control_the_kernel_lacks_and_names_what_it_offers():
    e = exp("bbr")
    with pytest.raises(ExperimentError) as err:
        refuse_congestion("cc.yaml", variants(e), "netns", ExperimentError, available="reno cubic", modules=())
    assert err.value.path == "variants[default].netns.congestion"
    assert "no 'bbr' congestion control: it offers reno cubic and no tcp_bbr module" in err.value.message
    refuse_congestion("cc.yaml", variants(e), "netns", ExperimentError, available="reno cubic bbr", modules=())
    refuse_congestion("cc.yaml", variants(e), "sim", ExperimentError, available="", modules=())   # not kernel TCP


def test_validate_and_run_refuse_alike_on_this_machine(monkeypatch):
    """check_backend_support (aspan validate and run) reads this machine's list: a kernel without BBR refuses it."""
    import experiments.congestion as cc
    monkeypatch.setattr(cc, "read_available", lambda *a: "reno cubic")
    monkeypatch.setattr(cc, "module_names", lambda *a: set())
    with pytest.raises(ExperimentError, match="netns.congestion: this kernel has no 'bbr'"):
        check_backend_support(exp("bbr"), "netns")  # type: ignore[arg-type]
    check_backend_support(exp("cubic"), "netns")  # type: ignore[arg-type]


def test_tcp_info_reads_the_pacing_rate_after_the_u32_fields():
    from experiments.backends.netns import tcpapp
    raw = struct.pack("=8B24IQ", 1, 0, 0, 0, 0, 0, 0, 0, *range(24), 1_250_000) + bytes(tcpapp.TCP_INFO_LEN - 112)

    class Sock:
        def getsockopt(self, *a: object) -> bytes:
            return raw

    info = tcpapp.tcp_info(Sock())  # type: ignore[arg-type]
    assert info["snd_cwnd"] == 18 and info["total_retrans"] == 23 and info["pacing_rate"] == 1_250_000
    assert tcpapp.pacing_bps(info) == 10_000_000.0
    assert tcpapp.pacing_bps({**info, "pacing_rate": tcpapp.UNPACED}) is None
