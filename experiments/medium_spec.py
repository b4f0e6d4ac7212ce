"""The ``medium:`` section of an experiment: its fields, its checks, and the medium it builds.

``model: none`` (the default) leaves the links of each backend as they are; ``model: dcf`` puts the
802.11 DCF medium of routing.medium.dcf between the nodes (docs/MEDIUM.md).  experiments.schema
declares the section with :data:`MEDIUM_SCHEMA` and calls :func:`check_medium`.
"""
from __future__ import annotations

import copy
import math
import random
from collections.abc import Mapping, Sequence
from typing import Any, Callable

from experiments.link_spec import explicit as explicit_link
from routing.medium import signal_trace
from fieldspec import INT, NUM, STR, ConfigError, Field, beside_source, fill, in_range, member_of, one_of
from routing.topology.graph import MeshGraph
from routing.medium.error_model import ErrorModelError, mode_for_rate
from routing.medium.dcf import Medium, RangeCapture, Topology
from routing.medium.phy import (AIRTIMES, NAV_MODELS, PRESETS, RATE_CONTROLS, Phy, default_airtime, error_mode,
                                timing_problems)
from routing.medium.phy import rate_problems as medium_rate_problems
from routing.medium.propagation import CHANNEL1_HZ, KTB_20MHZ_DBM, friis_loss_db, thermal_noise_dbm
from routing.medium.reception import SinrReception, hears_and_senses, signals_dbm

MEDIUM_MODELS = ("none", "dcf")
RECEPTIONS = ("range", "sinr")

# reception sinr's settings and what null means for each (docs/MEDIUM.md, "Reception by signal and interference")
SINR_DEFAULTS: dict[str, Any] = {
    "tx_power_dbm": 16.0206,                                     # ns-3 WifiPhy TxPowerStart/End: 40 mW
    "reference_loss_db": round(friis_loss_db(1.0, CHANNEL1_HZ), 2),   # free space at 1 m, 2412 MHz: 40.1 dB
    "path_loss_exponent": 3.0,                                   # ns-3 LogDistancePropagationLossModel
    "shadowing_sigma_db": 0.0,
    "shadowing_seed": 1,
    "noise_floor_dbm": round(thermal_noise_dbm(20e6, 7.0), 2),  # k T B over 20 MHz + ns-3's 7 dB noise figure
    "rx_sensitivity_dbm": -82.0,   # 802.11-2016 17.3.10.6's 6 Mbit/s minimum; ns-3's preamble detection's MinimumRssi
    "cs_threshold_dbm": -82.0,                                   # IEEE 802.11-2016 17.3.10.6
    "signal_dbm": {},
    "signal_trace": None,          # no recorded signals: the fixed ones above
}

#: ``medium.signal_trace``'s keys (routing/medium/signal_trace.py), as the loss model ``trace`` has them
SIGNAL_TRACE_SCHEMA: dict[str, Field] = {
    "file": Field(STR, None, None, "a link trace with signal_dbm (aspan trace extract of a pi run), relative to "
                                   "the experiment file's directory"),
    "run": Field((str, type(None)), None, None, "<variant>/rep<k> of the trace, when it holds more than one"),
    "at_s": Field(NUM, 0.0, None, "when the trace's offset_s is played (relative to the flow start)"),
    "offset_s": Field(NUM, 0.0, None, "the trace time played at at_s"),
    "loop": Field((bool,), False, None, "start the trace again after its last interval (else hold the last)"),
}

# Why a backend cannot run ``model: dcf`` (refused before the run starts, never ignored).  The sim
# drives the medium in virtual time, local through a medium process (experiments/backends/medium_process.py),
# netns through a medium daemon holding the NFQUEUE verdicts of every namespace (backends/netns/medium.py).
MEDIUM_REFUSED = {
    "pi": "on the Pis the radios are the medium: an emulated one would come on top of the real 802.11 cell; "
          "use medium.model none there",
}


def refuse_medium(source: str, variants: Sequence[tuple[str, Mapping[str, Any]]], backend: str,
                  error: type[ConfigError]) -> None:
    """Raise ``error`` naming the first variant whose medium ``backend`` cannot emulate."""
    reason = MEDIUM_REFUSED.get(backend)
    if reason is None:
        return
    for name, cfg in variants:
        if cfg["medium"]["model"] != "none":
            raise error(source, f"variants[{name}].medium.model",
                        f"{cfg['medium']['model']!r} cannot run on backend {backend}: {reason}")

F = Field
NULL = type(None)


def _or_null(check: Any) -> Any:
    """``check``, with null accepted."""
    return lambda v: None if v is None else check(v)


def _opt(types: tuple[type, ...], check: Any, doc: str) -> Field:
    """A setting whose default is null: the preset's value, or nothing."""
    return F(types, None, check, doc)


def _nullable(f: Field) -> Field:
    """``f`` accepting null, read as its default (check_medium): the way a variant takes back a setting of the
    base file, mappings included (a variant's mapping is otherwise merged into the base's key by key)."""
    return Field((*f.types, NULL), f.default, _or_null(f.check) if f.check else None, f.doc)


_SETTINGS: dict[str, Any] = {
    "model": F(STR, "none", member_of(MEDIUM_MODELS), "none: each backend's own links | dcf: a shared 802.11 DCF medium"),
    "standard": F(STR, "b", member_of(PRESETS), "PHY: b (HR/DSSS, 20 us slot) | g (ERP-OFDM, 9 us slot) | a (OFDM, "
                  "5 GHz) | n (HT20 MCS 0-7, long GI, 2.4 GHz) | n-sgi (HT20, short GI; minstrel: long and short)"),
    "rate_mbps": _opt(NUM, in_range(0, lo_open=True), "rate_control fixed: PHY rate of data frames (default: the "
                      "preset's, b 11, g and a 54); airtime txtime: one of the standard's rates; n: use mcs"),
    "mcs": _opt(INT, in_range(0, 7), "rate_control fixed, standard n or n-sgi: the HT MCS of data frames (default 7)"),
    "basic_rate_mbps": _opt(NUM, in_range(0, lo_open=True), "rate of ACK frames (default: b 2, the others 24); airtime "
                            "txtime: the highest rate of the basic rate set (the PHY's mandatory rates up to it)"),
    "rate_control": F(STR, "fixed", member_of(RATE_CONTROLS), "fixed: every frame at rate_mbps / mcs | minstrel: "
                      "a Minstrel-HT-like controller per link chooses each frame's retry chain (routing.medium.rate_control.minstrel)"),
    "airtime": _opt(STR, member_of(AIRTIMES), "simple: preamble + bits / rate (b and g only) | txtime: the standard's "
                    "PPDU durations (routing.medium.rates); default simple for b and g at a fixed rate, else txtime"),
    "slot_us": _opt(NUM, None, "aSlotTime, at least 1 us (default: b 20, g 9)"),
    "sifs_us": _opt(NUM, None, "aSIFSTime, at least 1 us (default 10); DIFS = SIFS + 2 slots"),
    "preamble_us": _opt(NUM, in_range(0), "PLCP preamble + header (default: b 192, g 20)"),
    "cw_min": _opt(INT, in_range(1), "aCWmin, at most cw_max (default: b 31, g 15)"),
    "cw_max": _opt(INT, in_range(1), "aCWmax (default 1023)"),
    "retry_limit": _opt(INT, in_range(1, 255), "dot11ShortRetryLimit: attempts of a frame before the link layer drops it (default 7)"),
    "rts_threshold": _opt(INT, in_range(0), "dot11RTSThreshold in bytes: frames whose MPDU (packet + 36 bytes) is "
                          "longer go with RTS/CTS; 0: every unicast frame (ns-2's default); null: never (Linux's)"),
    "long_retry_limit": _opt(INT, in_range(1, 255), "dot11LongRetryLimit: data attempts of a frame sent with RTS/CTS "
                             "(default 4; its RTSs count against retry_limit)"),
    "nav": _opt(STR, member_of(NAV_MODELS), "exchange: each node sensing the sender defers for its whole exchange | "
                "duration: NAV from the Duration fields, EIFS after an undecodable frame (default: duration with "
                "rts_threshold, else exchange)"),
    "capture_db": _opt(NUM, None, "reception range with positions: ns-2's capture (mac-802_11.cc, CPThresh): a frame "
                       "being received survives a transmission that starts during it and is at least this many dB "
                       "weaker at the receiver (ns-2: 10); null: none, any overlap within cs_range_m loses it"),
    "capture_exponent": _opt(NUM, None, "with capture_db: the path-loss exponent that turns distances into the "
                             "power ratio, 1 to 8 (default 4: ns-2's TwoRayGround beyond its crossover)"),
    "queue_packets": F(INT, 50, in_range(1), "interface queue per node, drop-tail"),
    "spacing_m": F(NUM, 200.0, in_range(0, lo_open=True), "placement line: the nodes on a line, this far apart"),
    "placement": F(STR, "line", one_of("line", "random"),
                   "where nodes without positions stand: line (in node order, spacing_m apart; with listed links "
                   "and no positions at all, the links are who hears whom) | random (uniform in area_m, seeded)"),
    "area_m": F((list,), [1000.0, 1000.0], None, "placement random: [width, height] in metres"),
    "placement_seed": F(INT, 1, in_range(0), "placement random: the seed of the positions (not the run's seed: "
                                              "every repetition keeps the same mesh)"),
    "positions": F((dict,), {}, None, "node -> [x, y] in metres (default: medium.placement)"),
    "range_m": F(NUM, 250.0, in_range(0, lo_open=True), "communication range: a node decodes frames from nodes this near"),
    "cs_range_m": F(NUM, 550.0, in_range(0, lo_open=True), "carrier-sense and interference range (>= range_m)"),
    "hears": F((dict,), {}, None, "explicit graph instead of positions: node -> [nodes whose frames it decodes]"),
    "senses": F((dict,), {}, None, "with hears: node -> [further nodes it senses and is interfered by]"),
    "reception": F(STR, "range", one_of(*RECEPTIONS), "range: decoded within range_m, lost to any overlapping "
                   "transmission within cs_range_m | sinr: by signal, noise and interference (the settings below)"),
    "tx_power_dbm": _opt(NUM, None, "sinr: transmit power, -30 to 30 dBm (default 16.02: 40 mW, ns-3's)"),
    "reference_loss_db": _opt(NUM, None, "sinr: path loss at 1 m in dB, > 0 (default 40.1: free space at 1 m, 2412 MHz)"),
    "path_loss_exponent": _opt(NUM, None, "sinr: log-distance exponent n, 1 to 8 (default 3, ns-3's; free space 2)"),
    "shadowing_sigma_db": _opt(NUM, None, "sinr: log-normal shadowing per link (both ways alike), its standard "
                               "deviation in dB, 0 to 20 (default 0: none)"),
    "shadowing_seed": _opt(INT, in_range(0), "sinr: the seed of the shadowing draws (default 1; not the run's "
                           "seed: every repetition keeps the same links)"),
    "noise_floor_dbm": _opt(NUM, None, "sinr: noise floor, at least k T B over 20 MHz (-100.97 dBm) (default "
                            "-93.97: k T B + 7 dB noise figure, ns-3's)"),
    "rx_sensitivity_dbm": _opt(NUM, None, "sinr: preamble detection: weaker frames are never decoded (default -82, "
                               "the standard's minimum and ns-3's; real radios: about -90 to -95 at 1 Mbit/s)"),
    "cs_threshold_dbm": _opt(NUM, None, "sinr: carrier sense by energy: busy while a frame at least this strong is "
                             "on the air, besides every frame the station decodes (default -82, IEEE 802.11-2016 "
                             "17.3.10.6)"),
    "signal_dbm": _opt((dict,), None, "sinr: measured signals, receiver -> {sender: dBm}, each replacing the "
                       "path loss and shadowing of that direction"),
    "signal_trace": _opt((dict,), None, "sinr: recorded signals per link and time, {file, run, at_s, offset_s, "
                         "loop}, replacing every link's fixed signal (routing/medium/signal_trace.py)"),
}
#: Every setting but the model takes null for its default (a variant clears the base file's positions
#: with ``positions: null``).
MEDIUM_SCHEMA: dict[str, Any] = {k: f if k == "model" else _nullable(f) for k, f in _SETTINGS.items()}


def _names(src: str, path: str, value: Any, nodes: list[str], error: type[ConfigError], errs: list[ConfigError]) -> bool:
    if not isinstance(value, list) or not all(isinstance(x, str) and x in nodes for x in value):
        errs.append(error(src, path, f"expected a list of node names ({', '.join(nodes)}), got {value!r}"))
        return False
    return True


def check_medium(src: str, cfg: dict[str, Any], error: type[ConfigError], errs: list[ConfigError]) -> None:
    """Cross-field checks of ``cfg['medium']``: known nodes, a range for every position, ranges in order,
    and the graph and the radio in agreement: every link's ends hear each other.  When the topology
    lists no links, they are filled in here: every pair that hears each other."""
    m = cfg["medium"]
    for key, spec in MEDIUM_SCHEMA.items():
        if m[key] is None:   # null: the setting's default
            m[key] = copy.deepcopy(spec.default)
    if m["model"] == "none":
        _refuse_settings_without_medium(src, m, error, errs)
        return
    nodes = cfg["topology"]["nodes"]
    sinr_errs = len(errs)   # a wrong sinr setting stops the topology checks below (they compute the signals)
    if m["reception"] == "sinr":
        _check_sinr(src, cfg, error, errs)
    sinr_ok = len(errs) == sinr_errs
    if m["reception"] != "sinr":
        _refuse_sinr_settings(src, m, error, errs)
    for key, why in timing_problems(timing(m)):   # reported beside the others: the topology does not need them
        errs.append(error(src, f"medium.{key}", why))
    for key, why in rate_problems(m):
        errs.append(error(src, f"medium.{key}", why))
    if m["rts_threshold"] is not None and m["nav"] == "exchange":
        errs.append(error(src, "medium.nav", "RTS/CTS (medium.rts_threshold) protects a frame through the NAV that the "
                          "Duration fields of the RTS and CTS set (IEEE 802.11-2016 10.3.2.4): it needs nav duration; "
                          "leave nav out or set it to duration"))
    n_errs = len(errs)
    changed = explicit_link(cfg)
    if changed:   # the medium replaces the links: a link setting would be ignored, so it is refused
        errs.append(error(src, f"link.{changed[0]}", f"medium.model {m['model']!r} replaces the links (rate, delay and "
                          "queue come from the medium section: rate_mbps, queue_packets); remove link.* or set "
                          "medium.model none"))
    if m["cs_range_m"] < m["range_m"]:
        errs.append(error(src, "medium.cs_range_m", f"expected >= medium.range_m ({m['range_m']}), got {m['cs_range_m']}"))
    area = m["area_m"]
    if not (isinstance(area, list) and len(area) == 2 and all(_finite(v) and v > 0 for v in area)):
        errs.append(error(src, "medium.area_m", f"expected [width, height] in metres (> 0), got {area!r}"))
    for n, xy in m["positions"].items():
        if n not in nodes:
            errs.append(error(src, f"medium.positions.{n}", f"unknown node; expected one of {', '.join(nodes)}"))
        elif not (isinstance(xy, list) and len(xy) == 2 and all(_finite(v) for v in xy)):
            errs.append(error(src, f"medium.positions.{n}", f"expected [x, y] in metres, got {xy!r}"))
    if m["positions"] and m["hears"]:
        errs.append(error(src, "medium.hears", "give either medium.positions or medium.hears, not both"))
    if m["hears"] and m["placement"] != "line":
        errs.append(error(src, "medium.placement", "with medium.hears nobody has a position; leave placement out"))
    if m["senses"] and not m["hears"]:
        errs.append(error(src, "medium.senses", "only with medium.hears (with positions, cs_range_m decides)"))
    for key in ("hears", "senses"):
        for n, lst in m[key].items():
            if n not in nodes:
                errs.append(error(src, f"medium.{key}.{n}", f"unknown node; expected one of {', '.join(nodes)}"))
            else:
                _names(src, f"medium.{key}.{n}", lst, nodes, error, errs)
    if len(errs) > n_errs:
        return
    _refuse_shared_positions(src, cfg, error, errs)
    _check_capture(src, cfg, error, errs)
    if m["reception"] == "sinr" and positions(cfg) is None:
        errs.append(error(src, "medium.reception", "reception sinr computes the signal from distances: give "
                          "medium.positions (or placement random); with listed links and no positions the links "
                          "are who hears whom (the range model)"))
    if len(errs) > n_errs or not sinr_ok:
        return
    topo = topology(cfg)
    links = cfg["topology"]["links"]
    if links is None:   # links from the radio: every pair that hears each other
        cfg["topology"]["links"] = [list(p) for p in MeshGraph.build(
            nodes, [(a, b) for a in nodes for b in topo.hears[a] if a in topo.hears[b]]).links]
        _check_signal_trace(src, cfg, error, errs)
        return
    _check_signal_trace(src, cfg, error, errs)
    for a, b in links:
        for x, y in ((a, b), (b, a)):
            if x not in topo.hears[y]:
                where = "medium.hears" if m["hears"] else "medium.positions"
                what = "chain neighbours" if cfg["topology"]["chain"] is not None else "linked (topology.links)"
                errs.append(error(src, f"{where}.{y}", f"{what} {x} and {y}: {y} does not hear {x} "
                                  f"(out of communication range)"))
                break


def radio_links_origin(cfg: Mapping[str, Any]) -> tuple[str, str]:
    """Where the links of a topology listed without links came from (check_medium derives them from the
    radio): the field the user wrote that placed the nodes, and the rule that made a pair a link; the
    graph's errors name these, not ``topology.links``, a field the user never wrote."""
    m = cfg["medium"]
    if m["hears"]:
        return "medium.hears", "every pair that hears each other (medium.hears)"
    if m["positions"]:
        where = "medium.positions"
    elif m["placement"] == "random":
        where = "medium.area_m"
    else:
        where = "medium.spacing_m"
    if m["reception"] == "sinr":
        return where, "every pair whose signal reaches the receiver's sensitivity (medium.rx_sensitivity_dbm) both ways"
    return where, f"every pair within medium.range_m ({m['range_m']:g} m) of each other"


CAPTURE_EXPONENT = 4.0   # ns-2's TwoRayGround beyond its crossover distance: power falls as d^-4


def _check_capture(src: str, cfg: dict[str, Any], error: type[ConfigError], errs: list[ConfigError]) -> None:
    """``capture_db`` (ns-2's capture rule, routing.medium.dcf.RangeCapture): reception range, positions to measure
    distances from, a power ratio above 0 dB; ``capture_exponent`` only with it (null: 4)."""
    m = cfg["medium"]
    if m["capture_db"] is None:
        if m["capture_exponent"] is not None:
            errs.append(error(src, "medium.capture_exponent", "only with medium.capture_db (it turns distances into "
                              "the power ratio of the capture rule); remove it or set capture_db"))
        return
    if m["capture_exponent"] is None:
        m["capture_exponent"] = CAPTURE_EXPONENT
    if not (_finite(m["capture_db"]) and 0 < m["capture_db"] <= 100):
        errs.append(error(src, "medium.capture_db", f"expected more than 0 and at most 100 dB (a power ratio; "
                          f"ns-2's CPThresh is 10 dB), got {m['capture_db']!r}"))
    if not (_finite(m["capture_exponent"]) and 1 <= m["capture_exponent"] <= 8):
        errs.append(error(src, "medium.capture_exponent", f"expected 1 to 8 (a path-loss exponent; two-ray ground "
                          f"4, free space 2), got {m['capture_exponent']!r}"))
    if m["reception"] == "sinr":
        errs.append(error(src, "medium.capture_db", "reception sinr captures by SINR (the stronger frame, either "
                          "order); capture_db is ns-2's rule for reception range: remove it"))
    elif positions(cfg) is None:
        errs.append(error(src, "medium.capture_db", "the capture rule compares distances: give medium.positions "
                          "(or placement line / random); with medium.hears or listed links alone nobody has a "
                          "position"))


def _refuse_sinr_settings(src: str, m: dict[str, Any], error: type[ConfigError], errs: list[ConfigError]) -> None:
    """A setting of reception sinr with reception range would be ignored: refused, naming it."""
    for key in SINR_DEFAULTS:
        if m[key] is not None:
            errs.append(error(src, f"medium.{key}", f"set to {m[key]!r} but medium.reception is {m['reception']!r}: "
                              "the setting is reception sinr's (it would be ignored); set medium.reception sinr, "
                              "or remove it"))


# The physical bounds of reception sinr's numbers: (low, high, why), low and high included.
_SINR_BOUNDS: dict[str, tuple[float, float, str]] = {
    "tx_power_dbm": (-30.0, 30.0, "a radio's transmit power (the 2.4 GHz band allows at most 1 W conducted, "
                     "30 dBm: FCC 47 CFR 15.247)"),
    "reference_loss_db": (1e-9, math.inf, "a passive channel attenuates: the loss at 1 m is > 0 dB (free space at "
                          "2.4 GHz: 40 dB)"),
    "path_loss_exponent": (1.0, 8.0, "a measured exponent (free space 2; 1.6-1.8 along corridors, 4-6 through "
                           "obstructed buildings: Rappaport, Wireless Communications, Table 4.2)"),
    "shadowing_sigma_db": (0.0, 20.0, "a log-normal shadowing's standard deviation (measured 4-12 dB)"),
    "noise_floor_dbm": (KTB_20MHZ_DBM, 0.0, "a receiver's noise floor: no receiver is quieter than the thermal "
                        f"noise k T B over 20 MHz, {KTB_20MHZ_DBM:.2f} dBm"),
    "rx_sensitivity_dbm": (-150.0, 0.0, "a receiver sensitivity in dBm"),
    "cs_threshold_dbm": (-150.0, 0.0, "a carrier-sense threshold in dBm"),
}


def _check_sinr(src: str, cfg: dict[str, Any], error: type[ConfigError], errs: list[ConfigError]) -> None:
    """reception sinr: its settings filled in (null: SINR_DEFAULTS), each within physics; the range model's
    settings refused (the signal decides who hears whom); a rate the error model knows; positions to
    measure distances from."""
    m = cfg["medium"]
    nodes = cfg["topology"]["nodes"]
    for key, default in SINR_DEFAULTS.items():
        if m[key] is None:
            m[key] = copy.deepcopy(default)
    for key, (lo, hi, why) in _SINR_BOUNDS.items():
        v = m[key]
        if not (_finite(v) and lo <= v <= hi):
            span = f"more than {lo:g}" if hi == math.inf else f"{lo:g} to {hi:g}"
            errs.append(error(src, f"medium.{key}", f"expected {span} ({why}), got {v!r}"))
    for key in ("range_m", "cs_range_m", "hears", "senses"):
        if m[key] != MEDIUM_SCHEMA[key].default:
            errs.append(error(src, f"medium.{key}", f"set to {m[key]!r} but medium.reception is 'sinr': the signal "
                              "decides who decodes and who senses whom (rx_sensitivity_dbm, cs_threshold_dbm); "
                              "remove it"))
    # airtime txtime: each frame's rate picks its error model mode (routing.medium.phy.error_mode: every rate
    # of every standard has one); the simple airtime's one rate must be one of the error model's
    for key in ("rate_mbps", "basic_rate_mbps") if airtime(m) == "simple" else ():
        try:
            mode_for_rate(m["standard"], timing(m)[key])
        except ErrorModelError as e:
            errs.append(error(src, f"medium.{key}", f"reception sinr needs a rate the error model knows: {e}"))
    given = m["signal_dbm"]
    if not isinstance(given, dict):
        errs.append(error(src, "medium.signal_dbm", f"expected receiver -> {{sender: dBm}}, got {given!r}"))
        return
    power = m["tx_power_dbm"]
    for rx, row in given.items():
        if rx not in nodes:
            errs.append(error(src, f"medium.signal_dbm.{rx}", f"unknown node; expected one of {', '.join(nodes)}"))
            continue
        if not isinstance(row, dict):
            errs.append(error(src, f"medium.signal_dbm.{rx}", f"expected {{sender: dBm}}, got {row!r}"))
            continue
        for tx, dbm in row.items():
            where = f"medium.signal_dbm.{rx}.{tx}"
            if tx not in nodes or tx == rx:
                errs.append(error(src, where, f"expected a sender other than {rx} ({', '.join(nodes)}), got {tx!r}"))
            elif not _finite(dbm):
                errs.append(error(src, where, f"expected a signal in dBm, got {dbm!r}"))
            elif _finite(power) and dbm > power:
                errs.append(error(src, where, f"{dbm:g} dBm exceeds the transmit power {power:g} dBm (a passive "
                                  "channel cannot deliver more than was sent)"))


def directed_links(cfg: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every directed link (a, b) of the topology: both ways of each of ``topology.links``."""
    return [(u, v) for a, b in cfg["topology"]["links"] for u, v in ((a, b), (b, a))]


def _check_signal_trace(src: str, cfg: dict[str, Any], error: type[ConfigError], errs: list[ConfigError]) -> None:
    """``medium.signal_trace``: its keys, its file (made absolute from the experiment file's directory) read
    once, a signal for every directed link of the topology in it (a trace replays only the links it recorded)."""
    m = cfg["medium"]
    if m["signal_trace"] is None:
        return
    found: list[ConfigError] = []
    st = fill(src, "medium.signal_trace", SIGNAL_TRACE_SCHEMA, m["signal_trace"], error, found)
    if not isinstance(st.get("file"), str):
        found.append(error(src, "medium.signal_trace.file", "expected a trace file (aspan trace extract RUN -o FILE)"))
    errs.extend(found)
    if found:
        return
    st["file"] = beside_source(src, st["file"])
    m["signal_trace"] = st
    for key, why in signal_trace.check(st, directed_links(cfg)):
        errs.append(error(src, f"medium.signal_trace.{key}", why))


def _refuse_settings_without_medium(src: str, m: dict[str, Any], error: type[ConfigError],
                                     errs: list[ConfigError]) -> None:
    """With ``model: none`` there is no medium, so any other medium setting away from its default (null
    counts as the default) would be ignored: refused, naming it."""
    for key, spec in MEDIUM_SCHEMA.items():
        if key != "model" and m[key] != spec.default:
            errs.append(error(src, f"medium.{key}", f"set to {m[key]!r} but medium.model is 'none' (no medium: "
                              "the setting would be ignored); set medium.model dcf, or remove it (a variant "
                              "turning off a base file's medium sets it to null)"))


def _refuse_shared_positions(src: str, cfg: Mapping[str, Any], error: type[ConfigError], errs: list[ConfigError]) -> None:
    """Two nodes cannot stand at the same point (the distance 0 would make each the other's every range)."""
    pos = positions(cfg)
    if pos is None:
        return
    seen: dict[tuple[float, float], str] = {}
    given = cfg["medium"]["positions"]
    for n, xy in pos.items():
        key = (float(xy[0]), float(xy[1]))
        if key in seen:
            other = seen[key]
            name = n if n in given else other
            errs.append(error(src, f"medium.positions.{name}", f"nodes {other} and {n} stand at the same position "
                              f"[{xy[0]:g}, {xy[1]:g}]; give each node its own"))
        else:
            seen[key] = n


def airtime(m: dict[str, Any]) -> str:
    """The airtime model the medium will have: the setting, or :func:`routing.medium.phy.default_airtime`."""
    return m["airtime"] or default_airtime(m["standard"], m["rate_control"])


def rate_problems(m: dict[str, Any]) -> list[tuple[str, str]]:
    """(setting, why) for each rate setting that does not fit the standard, the airtime or the rate control."""
    return medium_rate_problems(m["standard"], airtime(m), m["rate_control"], m["rate_mbps"], m["mcs"],
                                m["basic_rate_mbps"], m["preamble_us"])


def timing(m: dict[str, Any]) -> dict[str, float]:
    """The timing settings as the medium will have them: the preset's, each overridden where set."""
    p = dict(PRESETS[m["standard"]])
    p.update({k: m[k] for k in PRESETS[m["standard"]] if m[k] is not None})
    return p


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def positions(cfg: Mapping[str, Any]) -> dict[str, tuple[float, float]] | None:
    """Every node's position in metres, or None when the medium has none (medium.hears, or listed links
    and no positions: the links are who hears whom).  Also used to draw the mesh."""
    m = cfg["medium"]
    topo = cfg["topology"]
    nodes = topo["nodes"]
    if m["hears"] or (m["placement"] == "line" and not m["positions"] and topo.get("links") is not None
                      and topo.get("chain") is None):
        return None
    if m["placement"] == "random":
        rng = random.Random(m["placement_seed"])
        w, h = m["area_m"]
        drawn = {n: (rng.uniform(0, w), rng.uniform(0, h)) for n in nodes}   # drawn for every node: stable
    else:
        drawn = {n: (i * m["spacing_m"], 0.0) for i, n in enumerate(nodes)}
    return {n: tuple(m["positions"].get(n, drawn[n])) for n in nodes}  # type: ignore[misc]


def signals(cfg: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """reception sinr: the signal of every sender at every receiver, dBm (routing.medium.reception.signals_dbm)."""
    m = cfg["medium"]
    pos = positions(cfg)
    assert pos is not None, "reception sinr without positions is refused by check_medium"
    return signals_dbm(pos, m["tx_power_dbm"], m["reference_loss_db"], m["path_loss_exponent"],
                       m["shadowing_sigma_db"], m["shadowing_seed"], m["signal_dbm"])


def topology(cfg: Mapping[str, Any]) -> Topology:
    """Who hears whom: with reception sinr from the signals (sensitivity and carrier-sense threshold); else
    from ``medium.hears``, from positions and the ranges, or (listed links, no positions) the links
    themselves, each node sensing only its neighbours."""
    m = cfg["medium"]
    nodes = cfg["topology"]["nodes"]
    if m["reception"] == "sinr":
        return Topology(*hears_and_senses(signals(cfg), m["rx_sensitivity_dbm"], m["cs_threshold_dbm"]))
    if m["hears"]:
        hears = {n: m["hears"].get(n, []) for n in nodes}
        return Topology.from_graph(hears, {n: m["senses"].get(n, []) for n in nodes})
    pos = positions(cfg)
    if pos is None:
        graph = MeshGraph.build(nodes, cfg["topology"]["links"])
        return Topology.from_graph({n: graph.neighbours(n) for n in nodes})
    return Topology.from_positions(pos, m["range_m"], m["cs_range_m"])


def phy(cfg: Mapping[str, Any]) -> Phy:
    """The PHY and MAC settings of ``cfg``'s medium (every backend's medium is built from it)."""
    m = cfg["medium"]
    return Phy.preset(m["standard"], rts_threshold=m["rts_threshold"], nav=m["nav"],
                      long_retry_limit=m["long_retry_limit"], airtime=airtime(m), mcs=m["mcs"],
                      **{k: m[k] for k in PRESETS[m["standard"]]})


def build_medium(cfg: Mapping[str, Any], seed: int, replay: bool = True) -> Medium:
    """The DCF medium of one repetition; its backoff draws come from their own seeded generator, with
    reception sinr its reception draws from another, its rate controllers (one per link) and frame_error
    draws from the repetition's seed.  ``replay``: replay ``medium.signal_trace`` on the sim's clock (0 when
    probing starts); a medium daemon passes False and calls :func:`replay_signals` once its clock runs."""
    m = cfg["medium"]
    radio = None
    p = phy(cfg)
    if m["reception"] == "sinr":
        if p.txtime:   # the modes of the medium's fixed rate and top basic rate; each frame's rate picks its own
            data_mode, control_mode = error_mode(p.rate), error_mode(p.basic_rates[-1])  # type: ignore[arg-type]
        else:
            t = timing(m)
            data_mode = mode_for_rate(m["standard"], t["rate_mbps"])
            control_mode = mode_for_rate(m["standard"], t["basic_rate_mbps"])
        radio = SinrReception.from_dbm(signals(cfg), m["noise_floor_dbm"], data_mode, control_mode,
                                       random.Random(f"reception:{seed}"))
        if replay and m["signal_trace"] is not None:   # the sim's medium clock: 0 when probing starts, flows after settling
            radio.replay = signal_trace.build(m["signal_trace"], directed_links(cfg), cfg["etx"]["settle_s"])
    capture = None
    if m["capture_db"] is not None:   # reception range, with positions (check_medium)
        capture = RangeCapture(positions(cfg), m["capture_db"], m["capture_exponent"])  # type: ignore[arg-type]
    return Medium(p, topology(cfg), m["queue_packets"], random.Random(seed * 7919 + 11), radio,
                  rate_control=m["rate_control"], seed=seed, capture=capture)


def replay_signals(medium: Medium, cfg: Mapping[str, Any], t_flows: Callable[[], float],
                   seconds: Callable[[int], float]) -> None:
    """A medium daemon's ``medium.signal_trace`` (the local backend's medium process, netns's medium daemon):
    its clock is ns since the daemon started, ``seconds(ns)`` that clock on the nodes' (wall-clock seconds),
    ``t_flows()`` the flows' start on the nodes' clock, asked at the first frame (local's is fixed after its
    medium process started).  So the trace's second 0 is the flows' start on every backend.  Nothing
    without a trace."""
    st = cfg["medium"]["signal_trace"]
    if st is None:
        return
    assert medium.radio is not None          # the schema allows a signal trace with reception sinr only
    medium.radio.replay = signal_trace.build(st, directed_links(cfg), lambda: t_flows() - seconds(0))
