"""The sim backend's driver of the DCF medium (routing.medium.dcf) in virtual time.

Each node's links become :class:`MediumPort` s into one :class:`MediumDriver`; the driver wakes the
medium at its next event, hands delivered frames to the receiving node and logs the link layer's
drops at the sender (``queue``, ``mac_retry``).  Per-node counters are logged as one ``mac`` event
at the end of the repetition (docs/LOGS.md, docs/MEDIUM.md).
"""
from __future__ import annotations

from experiments.config import ExperimentConfig
from dataclasses import asdict
from typing import Any, Callable, Protocol

from experiments.medium_spec import build_medium
from experiments.radio_loss import attach as attach_radio_loss
from routing.medium.dcf import Delivered, Frame, Medium, Output
from routing.overlay.wire import PROBE, Packet, wire_size



class EventLoop(Protocol):
    """What the driver needs of experiments.backends.sim.EventLoop."""

    now: float

    def call_at(self, t: float, fn: Callable[..., None], *args: Any) -> None: ...


class SimNode(Protocol):
    """What the driver needs of experiments.backends.sim.SimNode."""

    core: Any

    def receive(self, pkt: Packet, frm: str | None = None) -> None: ...


class MediumDriver:
    def __init__(self, loop: EventLoop, medium: Medium, nodes: dict[str, SimNode]) -> None:
        self.loop = loop
        self.medium = medium
        self.nodes = nodes
        self._wake_at: int | None = None
        self.previous_hop: dict[str, str] | None = None   # node -> address, when captures name the previous hop

    def now_ns(self) -> int:
        return round(self.loop.now * 1e9)

    def send(self, src: str, dst: str, pkt: Packet) -> None:
        # ETX probes go group-addressed in 802.11 (no ACK, no retry); everything else unicast.
        frame = Frame(src, dst, pkt.copy(), wire_size(pkt), acked=pkt.ptype != PROBE)
        self._handle(self.medium.send(self.now_ns(), frame))
        self._reschedule()

    def _reschedule(self) -> None:
        t = self.medium.next_timer()
        if t is not None and (self._wake_at is None or t < self._wake_at):
            self._wake_at = t
            self.loop.call_at(t / 1e9, self._wake, t)

    def _wake(self, t: int) -> None:
        if self._wake_at != t:
            return  # superseded by an earlier wake-up
        self._wake_at = None
        self._handle(self.medium.advance(t))
        self._reschedule()

    def _handle(self, outs: list[Output]) -> None:
        for o in outs:
            f = o.frame
            if isinstance(o, Delivered):
                if self.previous_hop:
                    self.nodes[f.dst].receive(f.payload, frm=self.previous_hop[f.src])
                else:
                    self.nodes[f.dst].receive(f.payload)
            else:
                self.nodes[f.src].core.engine.drop(f.payload, o.reason, self.loop.now, attempts=f.attempts)

    def log_stats(self, emit: Callable[[str, dict[str, Any]], None]) -> None:
        for name, st in self.medium.stations.items():
            emit(name, dict(asdict(st.stats), elapsed_s=round(self.loop.now, 6)))


def driver(cfg: ExperimentConfig, seed: int, loop: EventLoop, nodes: dict[str, SimNode]) -> MediumDriver | None:
    """The medium of ``cfg`` driven on ``loop``; None when ``medium.model`` is none."""
    if cfg.medium.model == "none":
        return None
    medium = build_medium(cfg, seed)
    # loss that stands for radio errors, on virtual time (the nodes' t0 is 0: flows start after settling)
    attach_radio_loss(medium, cfg, seed, lambda: cfg.etx.flow_start_s, lambda ns: ns / 1e9)
    return MediumDriver(loop, medium, nodes)


class MediumPort:
    """What a SimNode sends to one neighbour: a frame on the medium (the SimLink's place)."""

    def __init__(self, driver: MediumDriver, src: str, dst: str) -> None:
        self.driver, self.src, self.dst = driver, src, dst

    def send(self, pkt: Packet) -> None:
        self.driver.send(self.src, self.dst, pkt)
