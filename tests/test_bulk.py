"""The bulk-transfer app (tcp_user.bulk): a sender and a receiver wired back to back in virtual
time, and the receiver's integrity check against a corrupted or misordered byte."""
from __future__ import annotations

import dataclasses
import hashlib
from typing import Any, Callable

import pytest

from tcp_user.bulk import BulkReceiver, BulkSender, bulk_payload
from tcp_user.config import TcpConfig
from tcp_user.segment import Segment
from test_rules_bulk import transfer

Tamper = Callable[[Segment], Segment]
SEGMENTS = 40


def _transfer(tamper: Tamper | None = None, variant: str = "sack",
              delay: float = 0.01) -> tuple[BulkSender, BulkReceiver, list[tuple[str, dict[str, Any]]]]:
    """Run one flow of ``SEGMENTS`` segments; ``tamper`` may rewrite each data segment on its way."""
    snd, rcv, events = transfer(SEGMENTS, start=0.0, tamper=tamper, flow="A-D", variant=variant, delay=delay)
    return snd, rcv, [(ev, f) for _, _, ev, f in events]


@pytest.mark.parametrize("variant", ["reno", "sack"])
def test_an_intact_transfer_matches_the_payload(variant: str) -> None:
    snd, rcv, events = _transfer(variant=variant)
    digest = hashlib.sha256(bulk_payload(7, SEGMENTS * 1000)).hexdigest()
    assert snd.done and rcv.done and rcv.ok is True
    assert snd.sha256 == rcv.expected == rcv.digest() == digest
    ends = [f for ev, f in events if ev == "flow_end"]
    assert {"flow": "A-D", "bytes": SEGMENTS * 1000, "sha256": digest} in ends
    assert {"flow": "A-D", "bytes": SEGMENTS * 1000, "sha256": digest, "ok": True} in ends


def _flip_byte_of(seq_index: int, offset: int) -> Tamper:
    """Flip one byte of the first transmission of data segment ``seq_index`` (0-based)."""
    done: set[int] = set()

    def tamper(seg: Segment) -> Segment:
        if seq_index in done:
            return seg
        first = (1000 + 1 + seq_index * 1000) & 0xFFFFFFFF
        if seg.seq != first:
            return seg
        done.add(seq_index)
        p = bytearray(seg.payload)
        p[offset] ^= 0x01
        return dataclasses.replace(seg, payload=bytes(p))
    return tamper


@pytest.mark.parametrize("index,offset", [(0, 0), (17, 500), (SEGMENTS - 1, 999)])
def test_a_corrupted_byte_fails_the_check_and_the_digest_is_of_what_arrived(index: int, offset: int) -> None:
    snd, rcv, events = _transfer(_flip_byte_of(index, offset))
    received = bytearray(bulk_payload(7, SEGMENTS * 1000))
    received[index * 1000 + offset] ^= 0x01
    assert rcv.done and rcv.ok is False
    assert rcv.digest() == hashlib.sha256(received).hexdigest() != rcv.expected
    assert {"flow": "A-D", "bytes": SEGMENTS * 1000, "sha256": rcv.digest(), "ok": False} in [
        f for ev, f in events if ev == "flow_end"]


def test_misordered_bytes_fail_the_check() -> None:
    """Two segments' payloads swapped on the wire: every byte arrives, in the wrong place."""
    a, b = (1000 + 1 + 3 * 1000), (1000 + 1 + 4 * 1000)
    payload = bulk_payload(7, SEGMENTS * 1000)
    swap = {a: payload[4000:5000], b: payload[3000:4000]}

    def tamper(seg: Segment) -> Segment:
        return dataclasses.replace(seg, payload=swap[seg.seq]) if seg.seq in swap else seg

    _, rcv, _ = _transfer(tamper)
    received = payload[:3000] + swap[a] + swap[b] + payload[5000:]
    assert rcv.done and rcv.ok is False
    assert rcv.digest() == hashlib.sha256(received).hexdigest()


def test_the_digest_of_a_partial_transfer_is_of_the_bytes_so_far() -> None:
    rcv = BulkReceiver(TcpConfig(), "A-D", SEGMENTS, 7, 0)
    assert rcv.digest() == hashlib.sha256(b"").hexdigest()
