"""routing.kernel.tsval: the TSval a data segment leaves behind, as the general reader finds it."""
import struct
from hypothesis import example, given, strategies as st
from scapy.all import IP, TCP, Raw
from aspan.fields import AspanFields
from routing.kernel.ip_option import encode_option, insert_option
from routing.kernel.ipv4 import PacketError


# ---- routing.kernel.tsval: the TSval a data segment leaves behind ---------------------------------------
from routing.kernel.tsval import TsvalTracker, tcp_tsval_offset  # noqa: E402


_TCP_OPTIONS = st.lists(st.sampled_from([("NOP", None), ("Timestamp", (123456789, 5)), ("MSS", 1448),
                                         ("SAckOK", b""), ("WScale", 7), ("EOL", None)]), max_size=5)


_LINUX = [("NOP", None), ("NOP", None), ("Timestamp", (123456789, 5))]      # how Linux lays them out


@given(_TCP_OPTIONS, st.booleans(), st.integers(0, 12), st.integers(0, 60))
@example(_LINUX, False, 5, 0)
@example(_LINUX, True, 5, 0)
@example(_LINUX, True, 0, 2)                     # the TSval cut short
@example(_LINUX, False, 0, 9)                    # the timestamps option cut short
@example([("MSS", 1448)] + _LINUX, True, 3, 0)   # the TSval elsewhere
def test_the_tracker_remembers_what_the_general_tsval_reader_finds(options, stamped, payload, cut):
    """TsvalTracker.note (the common layout read inline) and tcp_tsval_offset (any layout): the same TSval
    or none, also for truncated packets and malformed options."""
    data = bytes(IP(src="10.2.1.1", dst="10.2.1.4") / TCP(sport=1, dport=2, flags="A", options=options)
                 / Raw(b"x" * payload))
    if stamped:
        data = insert_option(data, 20, encode_option(AspanFields(), 1))
    ihl = (data[0] & 15) * 4
    for d in (data, data[:max(ihl, len(data) - cut)]):
        try:
            off = tcp_tsval_offset(d, ihl)
            want = None if off < 0 else int.from_bytes(d[off:off + 4], "big")
        except PacketError:
            want = None
        tracker = TsvalTracker()
        try:
            tracker.note(("a", 1, "b", 2), d, ihl)
        except struct.error:     # the general reader's own failure (a TSval cut off) is the tracker's too
            assert want is not None and len(d) < off + 4
            continue
        assert tracker.latest.get(("a", 1, "b", 2)) == want


def test_the_tracker_reads_no_tsval_out_of_a_payload_that_looks_like_the_option():
    data = bytes(IP(src="10.2.1.1", dst="10.2.1.4") / TCP(sport=1, dport=2, flags="A")
                 / Raw(b"\x01\x01\x08\x0a" + b"\x00\x00\x00\x07" + b"x" * 20))
    tracker = TsvalTracker()
    tracker.note(("a", 1, "b", 2), data, 20)
    assert tracker.latest == {} and tcp_tsval_offset(data, 20) == -1
