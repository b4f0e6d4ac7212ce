"""Packet loss models applied where a node hears a packet (probes included).

Every model is deterministic given its ``random.Random``: no clock, no global RNG.  Time is the
``now`` argument (seconds); models that depend on time require non-decreasing ``now``.

* :class:`NoLoss`
* :class:`Bernoulli`: independent losses, e.g. the A-SPAN paper's 0.5 % per node.
* :class:`GilbertElliott`: the bursty two-state model of the SNACK paper (Section IV: good state
  6 s, bad state 0.2 s, 50 % loss in the bad state), with exponential sojourn times.
* :class:`PacketGilbertElliott`: the same two states, changing per packet heard instead of per
  second (Gilbert 1960, Elliott 1963: a Markov chain stepped once per packet).

Per packet or per second (docs/LOGS.md, "Loss models in time"): ``none``, ``bernoulli``,
``bit-error`` and ``gilbert-elliott-packet`` decide from the packets alone, so the k-th packet a
node hears meets the same loss process on every backend; ``gilbert-elliott`` (its states last
seconds), ``ramp`` and ``down`` follow the clock, so a backend that moves more packets per second
puts more packets into each burst or each stretch of the ramp.
* :class:`LinkDown`: everything lost inside given time intervals.
* :class:`BitError`: independent bit errors: a packet of ``size`` bytes is lost with
  probability 1 - (1 - ber)^(8 size) (paper 000, Sec. 4: "dropping packets corresponding to
  the applied bit error rate").
* :class:`Composite`: drops if any of its models drops.

Size-aware models have ``drop_sized(now, size)``; :func:`drop_packet` calls it when a model
has it and ``drop(now)`` otherwise, so callers that know the packet size use that.

:data:`MODELS` is the registry of the models an experiment file can name (its settings, its
builder); :func:`build_loss_model` builds one from an experiment spec; :func:`node_rng` derives a
per-node, per-purpose RNG that is the same in every run and every Python process.
"""
from __future__ import annotations

import math
import random
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

from routing.links import trace_loss, trace_replay
from fieldspec import BOOL, NUM, STR, Field, in_range, one_of

__all__ = ["LossModel", "NoLoss", "Bernoulli", "GilbertElliott", "PacketGilbertElliott", "LinkDown", "BitError",
           "Composite", "build_loss_model", "drop_packet", "packet_dropper", "node_rng", "MODELS", "ModelKind"]


@runtime_checkable
class LossModel(Protocol):
    def drop(self, now: float) -> bool:
        """Called once for every packet the node hears; True: the packet is lost."""
        ...


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _probability(name: str, x: Any) -> float:
    if not _is_number(x) or not 0.0 <= x <= 1.0:   # also rejects NaN
        raise ValueError(f"{name} must be a probability in [0, 1], got {x!r}")
    return float(x)


def _positive(name: str, x: Any) -> float:
    if not _is_number(x) or not 0.0 < x < math.inf:
        raise ValueError(f"{name} must be a finite number > 0, got {x!r}")
    return float(x)


class NoLoss:
    """Never drops."""

    def drop(self, now: float) -> bool:
        return False

    def drop_sized(self, now: float, size: int) -> bool:
        return False

    def __repr__(self) -> str:
        return "NoLoss()"


class Bernoulli:
    """Drops each packet independently with probability ``rate``.

    Exactly one ``rng.random()`` per call (even for rate 0 or 1), so the k-th packet's fate
    depends only on the seed and k.
    """

    def __init__(self, rate: float, rng: random.Random) -> None:
        self.rate = _probability("rate", rate)
        self.rng = rng

    def drop(self, now: float) -> bool:
        return self.rng.random() < self.rate

    def drop_sized(self, now: float, size: int) -> bool:
        """:meth:`drop` (the size does not matter), with the forwarding step's signature."""
        return self.rng.random() < self.rate

    def __repr__(self) -> str:
        return f"Bernoulli(rate={self.rate})"


class GilbertElliott:
    """Two-state (good/bad) time-based Markov loss model (SNACK paper, Section IV).

    The channel stays in a state for an exponentially distributed time (mean ``good_mean_s``
    or ``bad_mean_s``) and then switches.  A packet heard in a state is lost with probability
    ``loss_good`` or ``loss_bad``.  Long-run fraction of time in the bad state:
    ``bad_mean_s / (good_mean_s + bad_mean_s)`` (0.2 / 6.2 = 3.2 % for the defaults), so the
    mean loss rate is ``loss_good * (1 - that) + loss_bad * that`` (1.6 % for the defaults).

    The state is advanced lazily to each call's ``now``; ``now`` must not decrease
    (ValueError).  The first call fixes the time origin: the first sojourn starts then
    (``now`` may be virtual seconds from 0 or epoch seconds).

    Two RNG streams are split off ``rng`` at construction: one draws sojourn times, the other
    the per-packet losses.  The state trajectory therefore depends only on the seed and the
    time origin, not on how many packets are heard, so runs with different traffic see the
    same channel.
    """

    def __init__(self, rng: random.Random, good_mean_s: float = 6.0, bad_mean_s: float = 0.2,
                 loss_good: float = 0.0, loss_bad: float = 0.5, start_good: bool = True) -> None:
        self.good_mean_s = _positive("good_mean_s", good_mean_s)
        self.bad_mean_s = _positive("bad_mean_s", bad_mean_s)
        self.loss_good = _probability("loss_good", loss_good)
        self.loss_bad = _probability("loss_bad", loss_bad)
        if not isinstance(start_good, bool):
            raise ValueError(f"start_good must be a bool, got {start_good!r}")
        self._state_rng = random.Random(rng.getrandbits(64))
        self._loss_rng = random.Random(rng.getrandbits(64))
        self._good = start_good
        self._now: float | None = None      # time the state is known for
        self._switch_at = math.inf          # end of the current sojourn (set at the first call)

    @property
    def state(self) -> str:
        """"good" or "bad", as of the latest ``now`` seen (the start state before any call)."""
        return "good" if self._good else "bad"

    @property
    def bad_fraction(self) -> float:
        """Stationary fraction of time in the bad state."""
        return self.bad_mean_s / (self.good_mean_s + self.bad_mean_s)

    @property
    def mean_loss(self) -> float:
        """Stationary (long-run) loss probability of a packet."""
        b = self.bad_fraction
        return self.loss_good * (1.0 - b) + self.loss_bad * b

    def _sojourn(self) -> float:
        return self._state_rng.expovariate(1.0 / (self.good_mean_s if self._good else self.bad_mean_s))

    def advance(self, now: float) -> str:
        """Move the state forward to ``now`` and return it (does not draw a loss)."""
        if not _is_number(now) or math.isnan(now):
            raise ValueError(f"now must be a number, got {now!r}")
        if self._now is None:
            self._switch_at = now + self._sojourn()
        elif now < self._now:
            raise ValueError(f"now went backwards: {now!r} < {self._now!r}")
        # Sojourn i ends at _switch_at; a packet at exactly that time sees the next state.
        while now >= self._switch_at:
            self._good = not self._good
            self._switch_at += self._sojourn()
        self._now = now
        return self.state

    def drop(self, now: float) -> bool:
        self.advance(now)
        # Always one draw per packet, whatever the state, to keep the stream aligned.
        u = self._loss_rng.random()
        return u < (self.loss_good if self._good else self.loss_bad)

    def __repr__(self) -> str:
        return (f"GilbertElliott(good_mean_s={self.good_mean_s}, bad_mean_s={self.bad_mean_s}, "
                f"loss_good={self.loss_good}, loss_bad={self.loss_bad}, state={self.state!r})")


class PacketGilbertElliott:
    """Two-state (good/bad) Gilbert-Elliott loss model stepped once per packet heard.

    The packet is lost with probability ``loss_good`` or ``loss_bad`` of the current state; then
    the state moves: good -> bad with probability ``p_good_bad``, bad -> good with ``p_bad_good``
    (per packet).  So a state lasts a geometric number of packets (mean ``1 / p_good_bad`` good,
    ``1 / p_bad_good`` bad) however fast they come: the same YAML is the same loss process on
    every backend, unlike :class:`GilbertElliott`, whose sojourns are seconds.  Stationary fraction
    of packets in the bad state: ``p_good_bad / (p_good_bad + p_bad_good)``.  The defaults (0.01
    and 0.3: 100 packets good, 3.3 bad on average) give the SNACK paper's 3.2 % of the time bad.

    Two RNG streams are split off ``rng``: one for the state changes and one for the losses, one
    draw each per packet, so the k-th packet's fate depends only on the seed and k.
    """

    def __init__(self, rng: random.Random, p_good_bad: float = 0.01, p_bad_good: float = 0.3,
                 loss_good: float = 0.0, loss_bad: float = 0.5, start_good: bool = True) -> None:
        self.p_good_bad = _probability("p_good_bad", p_good_bad)
        self.p_bad_good = _probability("p_bad_good", p_bad_good)
        self.loss_good = _probability("loss_good", loss_good)
        self.loss_bad = _probability("loss_bad", loss_bad)
        if not isinstance(start_good, bool):
            raise ValueError(f"start_good must be a bool, got {start_good!r}")
        self._state_rng = random.Random(rng.getrandbits(64))
        self._loss_rng = random.Random(rng.getrandbits(64))
        self._good = self._start_good = start_good

    @property
    def state(self) -> str:
        """"good" or "bad": the state the next packet will meet."""
        return "good" if self._good else "bad"

    @property
    def bad_fraction(self) -> float:
        """Stationary probability that a packet meets the bad state (both transition probabilities
        0: the state never changes, so the start state's)."""
        moves = self.p_good_bad + self.p_bad_good
        if moves == 0.0:
            return 0.0 if self._start_good else 1.0
        return self.p_good_bad / moves

    @property
    def mean_loss(self) -> float:
        """Stationary (long-run) loss probability of a packet."""
        b = self.bad_fraction
        return self.loss_good * (1.0 - b) + self.loss_bad * b

    def drop(self, now: float) -> bool:
        """``now`` is not used: the state moves with the packets, not the clock."""
        lost = self._loss_rng.random() < (self.loss_good if self._good else self.loss_bad)
        u = self._state_rng.random()
        if self._good:
            if u < self.p_good_bad:
                self._good = False
        elif u < self.p_bad_good:
            self._good = True
        return lost

    def __repr__(self) -> str:
        return (f"PacketGilbertElliott(p_good_bad={self.p_good_bad}, p_bad_good={self.p_bad_good}, "
                f"loss_good={self.loss_good}, loss_bad={self.loss_bad}, state={self.state!r})")


class LinkDown:
    """Drops everything heard in any interval ``[start, end)`` (``end`` may be ``inf``)."""

    def __init__(self, intervals: Sequence[Sequence[float]]) -> None:
        parsed: list[tuple[float, float]] = []
        for i, iv in enumerate(intervals):
            if isinstance(iv, (str, bytes)) or not isinstance(iv, Sequence) or len(iv) != 2:
                raise ValueError(f"down[{i}] must be a [start, end] pair, got {iv!r}")
            start, end = iv
            if not (_is_number(start) and _is_number(end)) or math.isnan(start) or math.isnan(end) \
                    or not start < end:
                raise ValueError(f"down[{i}] must be numbers with start < end, got {iv!r}")
            parsed.append((float(start), float(end)))
        self.intervals = sorted(parsed)

    def drop(self, now: float) -> bool:
        for start, end in self.intervals:
            if now < start:
                return False        # sorted by start: no later interval can contain now
            if now < end:
                return True
        return False

    def __repr__(self) -> str:
        return f"LinkDown({self.intervals})"


class Ramp:
    """Independent losses whose rate moves linearly from ``rate_from`` (until ``start``) to ``rate_to`` (from
    ``end`` on): a link that degrades (or recovers) slowly.  One ``rng.random()`` per packet."""

    def __init__(self, rate_from: float, rate_to: float, start: float, end: float, rng: random.Random) -> None:
        self.rate_from = _probability("rate_from", rate_from)
        self.rate_to = _probability("rate_to", rate_to)
        if not (_is_number(start) and _is_number(end)) or not start < end:
            raise ValueError(f"start_s must be before end_s, got {start!r} and {end!r}")
        self.start, self.end = float(start), float(end)
        self.rng = rng

    def rate(self, now: float) -> float:
        if now <= self.start:
            return self.rate_from
        if now >= self.end:
            return self.rate_to
        return self.rate_from + (self.rate_to - self.rate_from) * (now - self.start) / (self.end - self.start)

    def drop(self, now: float) -> bool:
        return self.rng.random() < self.rate(now)

    def __repr__(self) -> str:
        return f"Ramp({self.rate_from} -> {self.rate_to} over [{self.start}, {self.end}])"


class BitError:
    """Independent bit errors at rate ``ber``: a packet of ``size`` bytes is lost with
    probability ``1 - (1 - ber) ** (8 * size)`` (one ``rng.random()`` per packet).

    ``drop(now)`` (size unknown) uses ``default_size`` bytes.
    """

    def __init__(self, ber: float, rng: random.Random, default_size: int = 1000) -> None:
        self.ber = _probability("ber", ber)
        self.rng = rng
        self.default_size = default_size
        self._log1m = math.log1p(-self.ber) if self.ber < 1.0 else -math.inf

    def packet_loss(self, size: int) -> float:
        """Loss probability of a packet of ``size`` bytes."""
        if self.ber >= 1.0:
            return 1.0 if size > 0 else 0.0
        return -math.expm1(8 * size * self._log1m)

    def drop_sized(self, now: float, size: int) -> bool:
        return self.rng.random() < self.packet_loss(size)

    def drop(self, now: float) -> bool:
        return self.drop_sized(now, self.default_size)

    def __repr__(self) -> str:
        return f"BitError(ber={self.ber})"


def drop_packet(model: LossModel, now: float, size: int) -> bool:
    """``model.drop_sized(now, size)`` if the model is size-aware, else ``model.drop(now)``."""
    return packet_dropper(model)(now, size)


def packet_dropper(model: LossModel) -> Callable[[float, int], bool]:
    """:func:`drop_packet` for one model, looked up once: ``f(now, size)`` (the forwarding step's hot path)."""
    sized = getattr(model, "drop_sized", None)
    if sized is not None:
        return sized
    drop = model.drop
    return lambda now, size: drop(now)


class Composite:
    """Drops if any model drops.

    Every model is consulted on every call (no short-circuit), so each model's RNG stream
    advances the same way whatever the others decide.
    """

    def __init__(self, models: Sequence[LossModel]) -> None:
        self.models = list(models)
        self._droppers = [packet_dropper(m) for m in self.models]

    def drop(self, now: float) -> bool:
        dropped = False
        for m in self.models:
            dropped = m.drop(now) or dropped
        return dropped

    def drop_sized(self, now: float, size: int) -> bool:
        dropped = False
        for d in self._droppers:
            dropped = d(now, size) or dropped
        return dropped

    def __repr__(self) -> str:
        return f"Composite({self.models})"


def _keyed(key: str, f: Callable[..., Any], *args: Any) -> Any:
    """``f(key, *args)``, a validation error re-raised with the spec key in front."""
    try:
        return f(key, *args)
    except ValueError as e:
        raise ValueError(f"loss spec key {key!r}: {e}") from None


def _required(params: Mapping[str, Any], key: str, model: str) -> Any:
    if key not in params:
        raise ValueError(f"loss spec key {key!r} is required for model {model!r} (a probability in [0, 1])")
    return params[key]


def _no_loss(params: Mapping[str, Any], rng: random.Random) -> LossModel:
    return NoLoss()


def _bernoulli(params: Mapping[str, Any], rng: random.Random) -> LossModel:
    return Bernoulli(_keyed("rate", _probability, _required(params, "rate", "bernoulli")), rng)


def _bit_error(params: Mapping[str, Any], rng: random.Random) -> LossModel:
    return BitError(_keyed("ber", _probability, _required(params, "ber", "bit-error")), rng)


def _gilbert_elliott(params: Mapping[str, Any], rng: random.Random) -> LossModel:
    for k in ("good_mean_s", "bad_mean_s"):
        if k in params:
            _keyed(k, _positive, params[k])
    for k in ("loss_good", "loss_bad"):
        if k in params:
            _keyed(k, _probability, params[k])
    if "start_good" in params and not isinstance(params["start_good"], bool):
        raise ValueError(f"loss spec key 'start_good' must be true or false, got {params['start_good']!r}")
    return GilbertElliott(rng, **params)


def _packet_gilbert_elliott(params: Mapping[str, Any], rng: random.Random) -> LossModel:
    for k in ("p_good_bad", "p_bad_good", "loss_good", "loss_bad"):
        if k in params:
            _keyed(k, _probability, params[k])
    if "start_good" in params and not isinstance(params["start_good"], bool):
        raise ValueError(f"loss spec key 'start_good' must be true or false, got {params['start_good']!r}")
    return PacketGilbertElliott(rng, **params)


def _ramp(params: Mapping[str, Any], rng: random.Random) -> LossModel:
    return Ramp(_keyed("rate_from", _probability, params.get("rate_from", 0.0)),
                _keyed("rate_to", _probability, _required(params, "rate_to", "ramp")),
                params.get("start_s", 0.0), params.get("end_s", 30.0), rng)


Builder = Callable[[Mapping[str, Any], random.Random], LossModel]


@dataclass(frozen=True)
class ModelKind:
    """One loss model of the experiment files (``loss.default.model``, ``loss.nodes.<n>.model``).

    ``build(settings, rng)`` gets the model's settings as the spec gives them (no defaults
    filled in) and the node's RNG; it raises ValueError naming the key on a bad value.
    ``settings`` declares each key besides ``model`` and ``down`` (type, the default the
    experiment schema fills in, check, doc); the schema validates loss specs from it.
    """

    build: Builder
    settings: Mapping[str, Field] = field(default_factory=dict)
    doc: str = ""
    #: settings that are times relative to the flow start, as ``down`` is (the backends move them to their clock)
    times: tuple[str, ...] = ()
    #: problems the schema reports before anything starts, as (setting, reason), beyond each setting's own check
    check: Callable[[Mapping[str, Any]], list[tuple[str, str]]] | None = None


# settings the two Gilbert-Elliott models share (the schema requires one declaration per key)
_LOSS_GOOD = Field(NUM, 0.0, in_range(0, 1), "loss probability in the good state")
_LOSS_BAD = Field(NUM, 0.5, in_range(0, 1), "loss probability in the bad state")
_START_GOOD = Field(BOOL, True, None, "the channel starts in the good state")

# The registry of loss models: the schema and build_loss_model take their names and keys from
# here.  Adding a model: its class, and one line (docs/DESIGN.md, "Adding a loss model").
MODELS: dict[str, ModelKind] = {
    "none": ModelKind(_no_loss, {}, "no loss"),
    "bernoulli": ModelKind(_bernoulli, {
        "rate": Field(NUM, 0.0, in_range(0, 1), "drop probability per packet heard")},
        "independent losses (the A-SPAN paper's 0.5 % per node)"),
    "gilbert-elliott": ModelKind(_gilbert_elliott, {
        "good_mean_s": Field(NUM, 6.0, in_range(0, lo_open=True), "mean time in the good state"),
        "bad_mean_s": Field(NUM, 0.2, in_range(0, lo_open=True), "mean time in the bad state"),
        "loss_good": _LOSS_GOOD,
        "loss_bad": _LOSS_BAD,
        "start_good": _START_GOOD},
        "bursty two-state losses (the SNACK paper), states lasting seconds: more packets per burst on a faster backend"),
    "gilbert-elliott-packet": ModelKind(_packet_gilbert_elliott, {
        "p_good_bad": Field(NUM, 0.01, in_range(0, 1), "probability per packet heard of going from good to bad"),
        "p_bad_good": Field(NUM, 0.3, in_range(0, 1), "probability per packet heard of going from bad to good"),
        "loss_good": _LOSS_GOOD, "loss_bad": _LOSS_BAD, "start_good": _START_GOOD},
        "bursty two-state losses stepped per packet: the same loss process on every backend"),
    "bit-error": ModelKind(_bit_error, {
        "ber": Field(NUM, 0.0, in_range(0, 1), "bit error rate; a packet of n bytes is lost with 1 - (1 - ber)^(8n)")},
        "independent bit errors, loss per packet from its size (paper 000)"),
    "ramp": ModelKind(_ramp, {
        "rate_from": Field(NUM, 0.0, in_range(0, 1), "drop probability until start_s"),
        "rate_to": Field(NUM, 0.5, in_range(0, 1), "drop probability from end_s on"),
        "start_s": Field(NUM, 0.0, None, "when the rate starts to move (relative to the flow start)"),
        "end_s": Field(NUM, 30.0, None, "when it reaches rate_to (relative to the flow start)")},
        "independent losses at a rate moving linearly in time: a link that degrades slowly (issue 23)",
        times=("start_s", "end_s")),
    "trace": ModelKind(trace_loss.build, {
        "file": Field(STR, None, None, "a link trace (aspan trace extract RUN -o FILE: .parquet or .csv), relative "
                                       "to the experiment file's directory"),
        "link": Field(STR, None, None, "the recorded directed link to replay, \"A>B\", a link of the topology "
                                       "(under loss.links: by default the link itself)"),
        "run": Field(STR, None, None, "<variant>/rep<k> of the trace, when it holds more than one"),
        "at_s": Field(NUM, 0.0, None, "when the trace's offset_s is played (relative to the flow start)"),
        "offset_s": Field(NUM, 0.0, None, "the trace time played at at_s (its t_s counts from the recorded flow start)"),
        "loop": Field(BOOL, False, None, "start the trace again after its end (else past_end says what happens)"),
        "smooth_s": Field(NUM, 0.0, in_range(0), "take each interval's delivery over this window around it (the "
                                                 "probes' sampling noise out; 0: as recorded; replay probability)"),
        "replay": Field(STR, "probability", one_of(*trace_replay.REPLAYS),
                        "probability: the probes' delivery per interval; fates: what the data met, time-indexed; "
                        "markov: a two-state process fitted to it per fit_s (routing/links/trace_replay.py)"),
        "past_end": Field(STR, None, None, "past the recording's end without loop: stop (end the run) or hold "
                                           "(the last value); default stop, hold for replay probability"),
        "gap_s": Field(NUM, 0.1, in_range(0, lo_open=True), "replay fates: a recorded fate holds this long; "
                                                            "beyond, the probes' delivery"),
        "fit_s": Field(NUM, 5.0, in_range(0, lo_open=True), "replay markov: the window of each fit, seconds")},
        "a recorded link's delivery per interval, replayed (routing/links/trace_loss.py; issue 25)",
        times=("at_s",), check=trace_loss.check),
}


def build_loss_model(spec: Mapping[str, Any] | None, rng: random.Random) -> LossModel:
    """Build a loss model from an experiment spec, with the builder :data:`MODELS` registers.

    ``None`` or ``{"model": "none"}``: no loss.  ``{"model": "bernoulli", "rate": 0.005}``
    (rate required).  ``{"model": "gilbert-elliott", "good_mean_s": 6, "bad_mean_s": 0.2,
    "loss_good": 0, "loss_bad": 0.5, "start_good": true}`` (all optional, SNACK-paper defaults).
    ``{"model": "gilbert-elliott-packet", "p_good_bad": 0.01, "p_bad_good": 0.3, ...}`` (the same
    states stepped per packet; all optional).
    ``{"model": "bit-error", "ber": 1.5e-5}`` (ber required; loss per packet from its size).
    Any model may add ``"down": [[start, end], ...]``: a :class:`LinkDown` combined with it.
    A missing ``"model"`` means ``"none"``.  Unknown models, unknown keys and bad values raise
    ValueError naming the key and what was expected.
    """
    if spec is None:
        return NoLoss()
    if not isinstance(spec, Mapping):
        raise ValueError(f"loss spec must be a mapping or None, got {type(spec).__name__}")
    name = spec.get("model", "none")
    kind = MODELS.get(name) if isinstance(name, str) else None
    if kind is None:
        raise ValueError(f"loss spec key 'model' must be one of {sorted(MODELS)}, got {name!r}")
    allowed = tuple(kind.settings)
    unknown = sorted(str(k) for k in spec if k not in allowed and k not in ("model", "down"))
    if unknown:
        raise ValueError(f"loss spec key(s) {unknown} not valid for model {name!r}; "
                         f"expected some of {list(allowed) + ['down']}")
    model = kind.build({k: spec[k] for k in allowed if k in spec}, rng)

    if "down" in spec:
        down = spec["down"]
        if isinstance(down, (str, bytes)) or not isinstance(down, Sequence):
            raise ValueError(f"loss spec key 'down' must be a list of [start, end] pairs, got {down!r}")
        try:
            link_down = LinkDown(down)
        except ValueError as e:
            raise ValueError(f"loss spec key 'down': {e}") from None
        if not link_down.intervals:
            return model            # no interval: nothing to combine (and no layer on every packet)
        if isinstance(model, NoLoss):
            return link_down
        return Composite([model, link_down])
    return model


def node_rng(seed: int, node: str, stream: str = "loss") -> random.Random:
    """An RNG for (experiment seed, node name, purpose), identical across runs and processes.

    Derived with ``zlib.crc32`` of the node and stream names (``hash()`` of a str is salted
    per process).  The seed is folded in losslessly (zig-zag encoded so that negative seeds
    do not collide with positive ones): ``Random((zigzag(seed) << 32) | crc32(node NUL stream))``.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int, got {seed!r}")
    z = seed * 2 if seed >= 0 else -seed * 2 - 1
    crc = zlib.crc32(f"{node}\x00{stream}".encode("utf-8"))
    return random.Random((z << 32) | crc)


def absolute_times(spec: dict[str, Any], t_flows: float) -> dict[str, Any]:
    """A loss spec with its times (``down`` intervals, the model's ``times`` settings: routing.links.loss.ModelKind)
    moved from "relative to the flow start" to the backend's clock (flows start at ``t_flows``)."""
    out = dict(spec, down=[[t_flows + a, t_flows + b] for a, b in spec.get("down", [])])
    kind = MODELS.get(out.get("model", "none"))
    for key in (kind.times if kind is not None else ()):
        if key in out:
            out[key] = t_flows + out[key]
    return out
