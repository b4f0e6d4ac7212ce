"""Virtual-time backend: a seeded discrete-event run of the same node cores.

Links are directed, each with a rate, a propagation delay and a drop-tail
queue; a packet is copied when it leaves a link (as a real wire would), so no
two nodes share a packet object.  The same seed gives identical logs.
"""
from __future__ import annotations

import heapq
from functools import partial
from pathlib import Path
from typing import Any, Callable, Mapping

from experiments.backends import sim_medium
from experiments.build import build_node, link_state_record, overlay_tap, route_tables, start_rep, write_meta
from experiments.progress import LiveLine, rep_line
from tcp_user.bulk import BulkReceiver, log_delivered
from experiments.link_spec import link_queue, link_schedule, sim_link
from experiments.schema import Variant
from routing.drivers.eventlog import EventLog, WriteError, close_logs
from routing.forwarding.flowlog import exact_totals
from routing.links.linkem import LinkQueue
from routing.links.mahimahi import OpportunityQueue
from routing.links.trace_replay import TraceEnded
from routing.overlay.node import NodeCore
from routing.overlay.wire import Packet, wire_size


class EventLoop:
    """Heap of (time, order, callback, args); ``order`` keeps equal-time events deterministic."""

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list[tuple[float, int, Callable[..., None], tuple[Any, ...]]] = []
        self._order = 0

    def call_at(self, t: float, fn: Callable[..., None], *args: Any) -> None:
        self._order += 1
        heapq.heappush(self._heap, (t, self._order, fn, args))

    @property
    def events(self) -> int:
        """Events run so far (scheduled and popped; a superseded wake-up counts): free of any cost in the loop."""
        return self._order - len(self._heap)

    def run(self, until: float, stop: Callable[[], bool], tick: Callable[[], None] | None = None,
            tick_every: int = 4096) -> None:
        """Run the events due by ``until`` until ``stop()``; ``tick()`` (a progress line: it only reads) after
        every ``tick_every`` events."""
        heap = self._heap
        count = 0
        while heap and not stop():
            if tick is not None:
                count += 1
                if count >= tick_every:
                    count = 0
                    tick()
            t, order, fn, args = heapq.heappop(heap)
            if t > until:
                heapq.heappush(heap, (t, order, fn, args))   # not run: it stays due
                self.now = until
                return
            self.now = t
            fn(*args)


class SimLink:
    """A directed link: the rule of routing.links.linkem (serialisation at ``rate_bps`` behind the queue, then
    ``delay_s``; drop-tail at ``queue_packets``), in virtual time."""

    def __init__(self, loop: EventLoop, queue: LinkQueue | OpportunityQueue,
                 deliver: Callable[[Packet], None], on_queue_drop: Callable[[Packet], None]) -> None:
        self.loop = loop
        self.queue = queue
        self.deliver = deliver
        self.on_queue_drop = on_queue_drop

    def send(self, pkt: Packet) -> None:
        arrive = self.queue.admit(self.loop.now, wire_size(pkt))
        if arrive is None:
            self.on_queue_drop(pkt)
            return
        self.loop.call_at(arrive, self.deliver, pkt.copy())


class SimNode:
    def __init__(self, loop: EventLoop, core: NodeCore, log: EventLog) -> None:
        self.loop = loop
        self.core = core
        self.log = log
        self.links: dict[str, SimLink | sim_medium.MediumPort] = {}
        self._wake_at: float | None = None

    def send_all(self, out: list[tuple[str, Packet]]) -> None:
        for nxt, pkt in out:
            self.links[nxt].send(pkt)
        self.reschedule()

    def receive(self, pkt: Packet, frm: str | None = None) -> None:
        self.send_all(self.core.on_packet(pkt, self.loop.now, frm))

    def reschedule(self) -> None:
        t = self.core.next_timer()
        if t is None:
            return
        t = max(t, self.loop.now)
        if self._wake_at is None or t < self._wake_at:
            self._wake_at = t
            self.loop.call_at(t, self._wake, t)

    def _wake(self, t: float) -> None:
        if self._wake_at != t:
            return  # superseded by an earlier wake-up
        self._wake_at = None
        self.send_all(self.core.on_timer(self.loop.now))

    def queue_drop(self, pkt: Packet) -> None:
        self.core.engine.drop(pkt, "queue", self.loop.now)


def run_rep(variant: Variant, repetition: int, rep_dir: Path) -> dict[str, Any]:
    """Run one repetition of one variant in virtual time; writes node logs and meta.json into ``rep_dir``."""
    cfg, seed, meta = start_rep(variant, repetition, rep_dir, "sim")
    names = cfg.topology.nodes
    addrs = cfg.topology.addresses
    loop = EventLoop()
    logs = {n: EventLog(rep_dir / f"{n}.log", n, batch=True) for n in names}
    taps: dict[str, Any] = {}
    try:
        routes = route_tables(cfg)   # once for all nodes
        nodes = {n: SimNode(loop, build_node(cfg, n, seed, logs[n], 0.0, routes=routes), logs[n]) for n in names}
        by_addr = {addrs[n]: nodes[n] for n in names}
        link = sim_link(cfg)   # null fields: the sim's own 10 Mbit/s, 2 ms, 50 packets
        schedule = link_schedule(cfg)   # link.mahimahi: its opportunities instead of the rate (else None)
        medium = sim_medium.driver(cfg, seed, loop, nodes)  # type: ignore[arg-type]  # its SimNode is a Protocol; None for medium.model none
        name_of = {a: n for n, a in addrs.items()}
        for n, node in nodes.items():
            logs[n].emit(0.0, "node_start", address=addrs[n])
            tap = overlay_tap(cfg, rep_dir / f"{n}.pcapng", addrs[n])   # virtual timestamps
            if tap is not None:
                taps[n] = tap
                node.core.engine.capture(tap)
            for nbr in node.core.neighbours:
                dst = by_addr[nbr]
                if medium:
                    node.links[nbr] = sim_medium.MediumPort(medium, n, name_of[nbr])
                    continue
                # a capture names the previous hop of what a node hears
                # (and a link's own loss model, loss.links, is chosen by it)
                named = tap is not None or bool(dst.core.engine.step.link_lost)
                deliver = partial(dst.receive, frm=addrs[n]) if named else dst.receive
                node.links[nbr] = SimLink(loop, link_queue(link, cfg.etx.flow_start_s, schedule), deliver,
                                          node.queue_drop)
        if medium and (taps or any(node.core.engine.step.link_lost for node in nodes.values())):
            medium.previous_hop = dict(addrs)   # a capture names the previous hop, a link's loss model needs it
        for node in nodes.values():
            node.reschedule()
        apps = [ep for node in nodes.values() for ep in node.core.endpoints()]
        until = cfg.etx.flow_start_s + cfg.limits.max_duration_s
        ended = None
        live = LiveLine()
        try:
            loop.run(until, stop=_all_done(apps), tick=_progress(live, f"{variant.name} rep {repetition}", loop, apps,
                                                                 until, addrs))
        except TraceEnded as e:      # a replay past its recording's end (past_end: stop): the repetition ends here
            ended = f"TraceEnded: {e}"
        finally:
            live.done()
        finished = _all_done(apps)() and ended is None
        meta["status"] = "ok" if finished else "failed" if ended else "incomplete"
        if not finished:
            meta["error"] = ended or f"flows not finished after {cfg.limits.max_duration_s} s of virtual time"
        meta["virtual_end_s"] = round(loop.now, 6)
        routers = {n: node.core.routing.router for n, node in nodes.items() if node.core.routing is not None}
        if routers:   # the routes the nodes ended with (routing.topology.linkstate), as the mesh figure draws them
            meta["routing"] = link_state_record(cfg, {n: node.core.engine.routes for n, node in nodes.items()},
                                                routers)
        if medium:
            medium.log_stats(lambda n, stats: logs[n].emit(loop.now, "mac", **stats))
        for n, node in nodes.items():
            log_delivered(node.core.endpoints(), loop.now)
            node.core.engine.step.flush_drops(loop.now, final=True)
            extra: dict[str, Any] = {"capture": taps[n].writer.stats()} if n in taps else {}
            extra.update(node.core.routing_stats())
            logs[n].emit(loop.now, "node_stop", address=addrs[n], **exact_totals(node.core.engine.step), **extra)
        close_logs(logs.values())     # a write error of the last lines fails the repetition too
    except Exception as e:
        meta["status"] = "failed"
        meta["error"] = str(e) if isinstance(e, WriteError) else f"{type(e).__name__}: {e}"
        raise
    finally:
        try:
            close_logs(logs.values())  # closed already, unless an error came first (its own is raised)
        finally:
            for tap in taps.values():
                tap.close()
            write_meta(rep_dir, meta)
    return meta


def _progress(line: LiveLine, label: str, loop: EventLoop, apps: list[Any], until: float,
              addrs: Mapping[str, str]) -> Callable[[], None] | None:
    """What draws the repetition's live ``line`` (experiments.progress), or None when none is drawn (a pipe, not
    asked for)."""
    if not line.enabled:
        return None
    receivers = [a for a in apps if isinstance(a, BulkReceiver)]
    names = {a: n for n, a in addrs.items()}

    def flow_name(flow: str) -> str:
        src, _, dst = flow.partition(">")
        return f"{names.get(src.split(':')[0], src)}->{names.get(dst.split(':')[0], dst)}"

    def tick() -> None:
        if line.due():
            flows = [(flow_name(r.flow), r.received // r.conn.config.mss, r.size // r.conn.config.mss)
                     for r in receivers]
            line.show(rep_line(label, "virtual", loop.now, until, flows, line.wall() - line.started))
    return tick


def _all_done(apps: list[Any]) -> Callable[[], bool]:
    """The loop's stop test, asked after every event: every app done (one without ``done`` counts as done).
    ``done`` never goes back to False, so only the apps not yet seen done are looked at, the last first."""
    pending = [a for a in apps if not getattr(a, "done", True)]

    def stop() -> bool:
        while pending and pending[-1].done:
            pending.pop()
        return not pending
    return stop


def make_run_rep(options: dict[str, Any]) -> Callable[[Variant, int, Path], dict[str, Any]]:
    """The runner's entry point (experiments.backend_registry.BACKENDS); this backend takes no options."""
    return run_rep
