"""The resolved experiment, typed: what ``experiments.schema.load_experiment`` gives every variant.

One frozen dataclass per section of the schema (``topology``, ``routing``, ``loss``, ``etx``, ...), each
field with its type, and :class:`ExperimentConfig` holding them.  Backends and ``experiments/build.py``
read it by attribute (``cfg.etx.flow_start_s``), so a type checker (mypy, tests/test_typecheck.py)
catches a wrong field name before anything runs.

It crosses process boundaries as plain data: :meth:`ExperimentConfig.to_dict` gives exactly the
mapping the schema resolved (the same keys in the same order, lists as lists), which the runner
writes as the run directory's experiment YAML and hands to node processes, medium daemons and Pis as
JSON; :meth:`ExperimentConfig.from_dict` reads it back.  ``from_dict(to_dict(c)) == c`` and
``to_dict(from_dict(d)) == d`` for every resolved ``d`` (tests/test_config.py).

Nested free-form values (a loss spec, whose keys depend on its model; the medium's positions) are
read-only mappings and tuples, so nothing here can be changed after the schema resolved it.
"""
from __future__ import annotations

import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from fieldspec import ConfigError

__all__ = ["ExperimentConfig", "FlowSection", "CaptureSection", "AuthSection", "EtxSection", "LimitsSection",
           "LinkSection", "LogsSection", "LossSection", "MediumSection", "NetnsSection", "PiSection",
           "RoutingSection", "SnoopSection", "TcpSection", "TopologySection", "ConfigShapeError", "frozen", "plain"]

S = TypeVar("S", bound="_Section")


class ConfigShapeError(ConfigError):
    """A mapping handed to :meth:`ExperimentConfig.from_dict` is not a resolved experiment (a field
    missing or unknown, a section not a mapping); the message names the field."""


def frozen(value: Any) -> Any:
    """A YAML/JSON value made read-only: mappings as ``MappingProxyType``, lists as tuples, all the way down."""
    if isinstance(value, Mapping):
        return types.MappingProxyType({k: frozen(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(frozen(v) for v in value)
    return value


def plain(value: Any) -> Any:
    """The YAML/JSON value of a frozen one (or of a section): dicts and lists again, keys in their order."""
    if isinstance(value, _Section):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [plain(v) for v in value]
    return value


_NESTED: dict[type, dict[str, tuple[str, type]]] = {}


def _nested(cls: type) -> dict[str, tuple[str, type]]:
    """The fields of ``cls`` that hold sections: name -> ("one", section class) or ("many", section class)."""
    if cls in _NESTED:
        return _NESTED[cls]
    out = _NESTED[cls] = {}
    for name, hint in typing.get_type_hints(cls).items():
        if isinstance(hint, type) and issubclass(hint, _Section):
            out[name] = ("one", hint)
        elif typing.get_origin(hint) is tuple:
            args = typing.get_args(hint)
            if args and isinstance(args[0], type) and issubclass(args[0], _Section):
                out[name] = ("many", args[0])
    return out


class _Section(Mapping[str, Any]):
    """What every section shares: built from its mapping, turned back into it.

    A section is also a read-only mapping of its plain values (``section["field"]``, a copy): the
    schema's validators (experiments/medium_spec.py, link_spec.py, topology_spec.py, radio_loss.py)
    read the resolved mapping before it is typed, and read a section the same way after; the tests
    read it so too.  Backends and build.py read attributes, which the type checker checks.
    """

    __slots__ = ()

    @classmethod
    def from_dict(cls: type[S], data: Any, path: str = "", source: str = "<experiment config>") -> S:
        """The section of a resolved mapping; ConfigShapeError naming the field when it is not one."""
        if not isinstance(data, Mapping):
            raise ConfigShapeError(source, path, f"expected a mapping, got {type(data).__name__}")
        names = [f.name for f in fields(cls)]   # type: ignore[arg-type]
        unknown = [k for k in data if k not in names]
        if unknown:
            where = f"{path}.{unknown[0]}" if path else str(unknown[0])
            raise ConfigShapeError(source, where, f"unknown field; expected one of {', '.join(names)}")
        missing = [n for n in names if n not in data]
        if missing:
            raise ConfigShapeError(source, f"{path}.{missing[0]}" if path else missing[0], "missing")
        nested = _nested(cls)
        values: dict[str, Any] = {}
        for name in names:
            where = f"{path}.{name}" if path else name
            kind = nested.get(name)
            if kind is None:
                values[name] = frozen(data[name])
            elif kind[0] == "one":
                values[name] = kind[1].from_dict(data[name], where, source)  # type: ignore[attr-defined]
            else:
                if not isinstance(data[name], (list, tuple)):
                    raise ConfigShapeError(source, where, f"expected a list, got {type(data[name]).__name__}")
                values[name] = tuple(kind[1].from_dict(x, f"{where}[{i}]", source)  # type: ignore[attr-defined]
                                     for i, x in enumerate(data[name]))
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """The section's mapping as the schema resolved it (its fields in order)."""
        return {f.name: plain(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled as its mapping (a repetition sent to a worker process or a Dask worker): read-only
        mappings do not pickle, and the mapping is what crosses processes anyway."""
        return (type(self).from_dict, (self.to_dict(),))

    def __getitem__(self, key: str) -> Any:
        """The plain value of field ``key`` (a copy: changing it changes nothing here)."""
        if key not in {f.name for f in fields(self)}:  # type: ignore[arg-type]
            raise KeyError(key)
        return plain(getattr(self, key))

    def __iter__(self) -> Iterator[str]:
        return (f.name for f in fields(self))  # type: ignore[arg-type]

    def __len__(self) -> int:
        return len(fields(self))  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class TopologySection(_Section):
    """``topology``: the graph: nodes, links, addresses, route overrides."""

    chain: tuple[str, ...] | None
    nodes: tuple[str, ...]
    links: tuple[tuple[str, str], ...]
    addresses: Mapping[str, str]
    routes: Mapping[str, Mapping[str, str]]


@dataclass(frozen=True, slots=True)
class RoutingSection(_Section):
    """``routing``: how routes are computed (routing.topology.linkstate)."""

    metric: str
    dynamic: bool
    advertise_s: float
    hold_s: float
    dead_s: float
    margin: float
    switch_after_s: float
    daemon: str
    babel_hello_s: float

    @property
    def babeld(self) -> bool:
        """Does Debian's babeld compute the routes (netns only) instead of the builtin link-state core?"""
        return self.daemon == "babeld"

    @property
    def link_state(self) -> bool:
        """Do the nodes' own link-state cores route (metric etx or dynamic, and not babeld)?"""
        return (self.metric == "etx" or self.dynamic) and not self.babeld


@dataclass(frozen=True, slots=True)
class LossSection(_Section):
    """``loss``: loss specs by model (the default, per node, per directed link ``A>B``), read by model."""

    default: Mapping[str, Any]
    nodes: Mapping[str, Mapping[str, Any]]
    links: Mapping[str, Mapping[str, Any]]

    def of_node(self, node: str) -> Mapping[str, Any]:
        """The loss spec of what ``node`` hears: its own, else the default."""
        return self.nodes.get(node, self.default)


@dataclass(frozen=True, slots=True)
class LogsSection(_Section):
    """``logs``: what becomes of the logs after a repetition."""

    compact: bool


@dataclass(frozen=True, slots=True)
class CaptureSection(_Section):
    """``capture``: per-node pcapng captures."""

    enabled: bool
    max_mb: float


@dataclass(frozen=True, slots=True)
class LinkSection(_Section):
    """``link``: the emulated links (null: each backend's own)."""

    rate_mbps: float | None
    delay_ms: float | None
    queue_packets: int | None
    mahimahi: str | None


@dataclass(frozen=True, slots=True)
class MediumSection(_Section):
    """``medium``: the shared 802.11 medium (docs/MEDIUM.md)."""

    model: str
    standard: str | None
    rate_mbps: float | None
    mcs: int | None
    basic_rate_mbps: float | None
    rate_control: str | None
    airtime: str | None
    slot_us: float | None
    sifs_us: float | None
    preamble_us: float | None
    cw_min: int | None
    cw_max: int | None
    retry_limit: int | None
    rts_threshold: int | None
    long_retry_limit: int | None
    nav: str | None
    capture_db: float | None
    capture_exponent: float | None
    queue_packets: int | None
    spacing_m: float | None
    placement: str | None
    area_m: tuple[float, ...] | None
    placement_seed: int | None
    positions: Mapping[str, Any] | None
    range_m: float | None
    cs_range_m: float | None
    hears: Mapping[str, Any] | None
    senses: Mapping[str, Any] | None
    reception: str | None
    tx_power_dbm: float | None
    reference_loss_db: float | None
    path_loss_exponent: float | None
    shadowing_sigma_db: float | None
    shadowing_seed: int | None
    noise_floor_dbm: float | None
    rx_sensitivity_dbm: float | None
    cs_threshold_dbm: float | None
    signal_dbm: Mapping[str, Any] | None
    signal_trace: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class EtxSection(_Section):
    """``etx``: the delivery-ratio probes, and when the flows start."""

    window: int
    interval_s: float
    mode: str
    before_full: str
    initial: float
    settle_s: float
    warmup_interval_s: float
    log_interval_s: float

    @property
    def flow_start_s(self) -> float:
        """When the flows start, in seconds after the nodes' t0: once the probes have settled (``settle_s``).
        Every backend times its flows, its loss ``down`` intervals and its deadline from here."""
        return self.settle_s


@dataclass(frozen=True, slots=True)
class TcpSection(_Section):
    """``tcp``: the user-space TCP."""

    variant: str
    init_cwnd: int
    rcv_buffer_segments: int
    min_rto_s: float
    initial_rto_s: float
    max_rto_s: float
    snack: bool
    delayed_ack: bool
    delack_s: float
    limited_transmit: bool
    rack: bool
    timestamps: bool
    newreno: bool
    frto: bool


@dataclass(frozen=True, slots=True)
class SnoopSection(_Section):
    """``snoop``: the snoop agents and the A-SPAN header."""

    policy: str
    pkt_qos: float
    snoop_after: int
    snoop_limit: int
    fixed_hop: int
    dupack: str
    cache_bytes: int
    scheme: str
    snoop_tick_s: float
    max_local_rxmit: int
    max_cached_segments: int
    sender_qos: str
    qos_arms: tuple[float, ...]
    qos_epoch_s: float
    qos_guard: float
    qos_margin: float
    qos_recheck_epochs: int
    qos_reprobe_epochs: int


@dataclass(frozen=True, slots=True)
class NetnsSection(_Section):
    """``netns``: the netns backend (and the Pis' kernel data plane)."""

    handlers: str
    congestion: str
    traffic: str
    option: int
    rate_mbit: float
    mtu: int
    cwnd_poll_ms: float
    queue_maxlen: int
    realtime: bool


@dataclass(frozen=True, slots=True)
class AuthSection(_Section):
    """``auth``: the authenticated overlay."""

    mac: str | bool


@dataclass(frozen=True, slots=True)
class PiSection(_Section):
    """``pi``: the pi backend."""

    data_plane: str
    bitrate_mbps: float | None
    mcs: int | None
    rts_threshold: int | None
    txpower_dbm: float | None


@dataclass(frozen=True, slots=True)
class LimitsSection(_Section):
    """``limits``: when a run is stopped."""

    max_duration_s: float


@dataclass(frozen=True, slots=True)
class FlowSection(_Section):
    """One of ``flows``: a bulk transfer."""


    sender: str
    receiver: str
    segments: int
    segment_size: int
    start_s: float
    variant: str | None


@dataclass(frozen=True, slots=True)
class ExperimentConfig(_Section):
    """One variant's resolved experiment: every section of the schema, by attribute."""

    name: str
    description: str
    backend: str
    seed: int
    repetitions: int
    out: str
    baseline: str
    scenario: str
    topology: TopologySection
    routing: RoutingSection
    loss: LossSection
    logs: LogsSection
    capture: CaptureSection
    link: LinkSection
    medium: MediumSection
    etx: EtxSection
    tcp: TcpSection
    snoop: SnoopSection
    netns: NetnsSection
    auth: AuthSection
    pi: PiSection
    flows: tuple[FlowSection, ...]
    limits: LimitsSection


    @classmethod
    def of(cls, data: Mapping[str, Any] | ExperimentConfig, source: str = "<experiment config>") -> ExperimentConfig:
        """``data`` as an ExperimentConfig: itself, or read from its mapping (a config that crossed a process)."""
        return data if isinstance(data, ExperimentConfig) else cls.from_dict(plain(data), "", source)
