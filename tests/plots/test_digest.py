"""plots.digest and plots.digest_store: what the summary and the figures read instead of the events.

The digest path is checked against a straightforward reference computed here from the raw
event dicts (no pandas), and its summary.csv against rows computed directly from the loaded logs.
"""
from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
import numpy as np
import pandas as pd
import pytest
from plots.compact import compact_rep
from plots.data import load_run
from plots.digest import MAX_POINTS, Hist, reduce_series
from plots.digest_store import DIGEST, digest_key, read_digest, rep_digest, run_digests
from plots.logs import iter_reps, load_rep
from plots.run_summary import write_summary
from plots.summary import rep_rows, write_summary_rows
from plots.testing import (FLOW, FLOW_DA, NODES, basic_flow_events, ev, reverse_flow_events, write_experiment,
                           write_rep)


def long_flow_events(seed: int, segments: int = 3000) -> list[dict]:
    """A flow long enough that every drawn series is reduced (more than MAX_POINTS points):
    random transmissions per packet, a cwnd change per segment, cache changes at B and C."""
    rng = random.Random(seed)
    out = [ev(0.0, n, "node_start", address=a) for n, a in NODES.items()]
    out.append(ev(1.0, "A", "flow_start", flow=FLOW, segments=segments, segment_size=1000,
                  variant="v"))
    t = 1.0
    for i in range(segments):
        t += 0.001
        seq = 1000 * rng.choice(range(segments))           # not in order; some seqs repeat
        for hop, node in enumerate(("A", "B", "C")[: rng.choice((1, 2, 3))]):
            out.append(ev(t, node, "tx", flow=FLOW, seq=seq, len=1000, hop=hop,
                          kind="local" if rng.random() < 0.05 else "fwd"))
        out.append(ev(t, "A", "cwnd", cwnd=rng.choice((1000, 2500, 4000, 70_000)), ssthresh=9,
                      mss=1000))
        out.append(ev(t, rng.choice(("B", "C")), "cache", segments=rng.randrange(0, 40),
                      bytes=0))
        if rng.random() < 0.01:
            out.append(ev(t, "A", "loss", kind=rng.choice(("dupack", "rto")), seq=seq))
    out += [ev(t + 0.1, "A", "flow_end", flow=FLOW, bytes=1000 * segments, sha256="x"),
            ev(t + 0.2, "D", "flow_end", flow=FLOW, bytes=1000 * segments, sha256="x", ok=True)]
    return out


def make_run(root: Path, long: bool = True) -> tuple[Path, dict[tuple[str, int], list[dict]]]:
    """A run of one long flow (two repetitions; left out without ``long``), one short snooping
    flow and a two-flow repetition, with the events each repetition was written from."""
    run = root / "run"
    write_experiment(run, ["long", "short", "two"] if long else ["short", "two"])
    events = {("long", 0): long_flow_events(1), ("long", 1): long_flow_events(2)} if long else {}
    events.update({("short", 0): basic_flow_events(),
                   ("two", 0): basic_flow_events() + reverse_flow_events()})
    for (v, k), evs in events.items():
        flows = None
        if v == "two":
            flows = [{"sender": "A", "receiver": "D", "segments": 3, "segment_size": 1000},
                     {"sender": "D", "receiver": "A", "segments": 2, "segment_size": 1000}]
        write_rep(run, v, k, evs, flows=flows, segments=3000 if v == "long" else 3)
    return run, events


# ----------------------------------------------------------------------------- the reference

def ref_tx_counts(events: list[dict], flow: str) -> list[int]:
    """Transmissions per (flow, seq), in (flow, seq) order: counted by hand."""
    c = Counter((e["flow"], e["seq"]) for e in events if e["ev"] == "tx" and e.get("flow") == flow)
    return [c[k] for k in sorted(c)]


def ref_cwnd(events: list[dict], sender: str, flow: str, n_flows: int) -> list[float]:
    """The sender's cwnd in segments, in log order (an event without flow counts for the sender's
    only flow)."""
    return [e["cwnd"] / e["mss"] for e in events if e["ev"] == "cwnd" and e["node"] == sender
            and (e.get("flow") == flow or ("flow" not in e and (n_flows == 1 or sender == "A")))]


def ref_cache(events: list[dict]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for e in events:
        if e["ev"] == "cache":
            out.setdefault(e["node"], []).append(float(e["segments"]))
    return dict(sorted(out.items()))


def assert_hist(hist: Hist, samples: list[float]) -> None:
    values, counts = np.unique(np.asarray(samples, dtype=float), return_counts=True)
    np.testing.assert_array_equal(hist.values, values)
    np.testing.assert_array_equal(hist.counts, counts)
    assert hist.median() == float(np.median(samples))


def check_against_reference(run: Path, events: dict[tuple[str, int], list[dict]]) -> None:
    data = load_run(run, write=False)
    flows_of = {"long": [(FLOW, "A")], "short": [(FLOW, "A")], "two": [(FLOW, "A"), (FLOW_DA, "D")]}
    seen = 0
    for r in data.reps:
        evs = sorted(events[(r.variant, r.repetition)], key=lambda e: (e["node"], e["t"]))
        flow, sender = flows_of[r.variant][0 if r.flow.startswith("A->") else 1]
        counts = ref_tx_counts(evs, flow)
        assert_hist(r.tx_hist, counts)
        t, y = reduce_series(np.arange(len(counts), dtype=float), np.asarray(counts, dtype=float))
        np.testing.assert_array_equal(r.digest.tx_drawn.y, y)
        np.testing.assert_array_equal(r.digest.tx_drawn.t, t)
        cwnd = ref_cwnd(evs, sender, flow, r.n_flows)
        assert_hist(r.cwnd_hist, cwnd)
        np.testing.assert_array_equal(r.cwnd["cwnd_seg"].to_numpy(), cwnd)      # the full series
        t, y = reduce_series(r.cwnd["t"].to_numpy(float), np.asarray(cwnd, dtype=float))
        np.testing.assert_array_equal(r.digest.cwnd_drawn.t, t)
        np.testing.assert_array_equal(r.digest.cwnd_drawn.y, y)
        cache = ref_cache(evs)
        assert sorted(r.cache_drawn) == sorted(cache)
        for node, sizes in cache.items():
            np.testing.assert_array_equal(r.cache[node]["segments"].to_numpy(), sizes)
            t, y = reduce_series(r.cache[node]["t"].to_numpy(float), np.asarray(sizes))
            np.testing.assert_array_equal(r.cache_drawn[node].y, y)
            np.testing.assert_array_equal(r.cache_drawn[node].t, t)
        seen += 1
    assert seen == 5                       # 2 long, 1 short, the two flows of "two"
    long = next(r for r in data.reps if r.variant == "long")
    assert len(long.digest.cwnd_drawn.t) == MAX_POINTS < long.cwnd_hist.n   # really reduced


def direct_summary(run: Path, out: Path) -> bytes:
    """summary.csv from rows computed directly from each repetition's loaded logs."""
    rows = [row for v, k, d in iter_reps(run) for row in rep_rows(load_rep(d), v, k)]
    out.mkdir()
    write_summary_rows(out, rows)
    return (out / "summary.csv").read_bytes()


# ----------------------------------------------------------------------------- tests

def test_the_digest_of_json_lines_logs_matches_the_reference(tmp_path: Path) -> None:
    run, events = make_run(tmp_path)
    check_against_reference(run, events)
    assert not list(run.glob(f"*/rep*/{DIGEST}"))          # JSON Lines: never cached


def test_a_compacted_run_is_plotted_from_cached_digests_that_match_the_reference(tmp_path: Path) -> None:
    run, events = make_run(tmp_path)
    expected = direct_summary(run, tmp_path / "direct")
    for _v, _k, rep in iter_reps(run):
        compact_rep(rep)
        assert (rep / DIGEST).is_file()
    write_summary(run)
    assert (run / "summary.csv").read_bytes() == expected
    check_against_reference(run, events)


def test_summary_from_digests_is_the_direct_summary_byte_for_byte(tmp_path: Path) -> None:
    run, _events = make_run(tmp_path)
    expected = direct_summary(run, tmp_path / "direct")
    write_summary(run)
    assert (run / "summary.csv").read_bytes() == expected


def test_histogram_median_and_pooling_are_numpys(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    for n in (1, 2, 3, 10, 11, 1000):
        parts = [rng.integers(0, 7, size=n).astype(float) / 3 for _ in range(3)]
        pooled = Hist.pooled([Hist.of(p) for p in parts])
        assert_hist(pooled, list(np.concatenate(parts)))
    with_inf = Hist.of(np.array([1.0, np.inf, 2.0, np.nan]))
    assert with_inf.n == 3 and with_inf.largest() == np.inf and with_inf.finite().n == 2


def test_a_stale_digest_is_recomputed(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_experiment(run, ["aspan"])
    rep = write_rep(run, "aspan", 0, basic_flow_events(losses=1))
    compact_rep(rep)
    key = digest_key(rep)
    assert read_digest(rep, key).flows[0].row["losses_dupack"] == 1
    # meta.json changes (a failed run marked afterwards): the digest no longer describes it
    meta = json.loads((rep / "meta.json").read_text())
    (rep / "meta.json").write_text(json.dumps({**meta, "status": "failed"}))
    assert digest_key(rep) != key and read_digest(rep, digest_key(rep)) is None
    assert rep_digest(rep, "aspan", 0).flows[0].row["status"] == "failed"
    assert read_digest(rep, digest_key(rep)) is not None       # rewritten
    # the events change: the same
    other = write_rep(tmp_path / "other", "aspan", 0, basic_flow_events(losses=4))
    compact_rep(other)
    (rep / "events.parquet").write_bytes((other / "events.parquet").read_bytes())
    [(_d, digest)] = run_digests(run, write=False)
    assert digest.flows[0].row["losses_dupack"] == 4
    assert read_digest(rep, digest_key(rep)) is None               # write=False: left as it was


def test_a_digest_that_cannot_be_read_is_reported_with_its_path(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_experiment(run, ["aspan"])
    rep = write_rep(run, "aspan", 0, basic_flow_events())
    compact_rep(rep)
    (rep / DIGEST).write_bytes(b"not a zip file")
    with pytest.raises(ValueError, match=str(rep / DIGEST)):
        load_run(run, write=False)


def test_digests_are_computed_in_worker_processes_the_same(tmp_path: Path) -> None:
    run, _events = make_run(tmp_path)
    for _v, _k, rep in iter_reps(run):
        compact_rep(rep)
        (rep / DIGEST).unlink()
    serial = run_digests(run, write=False, jobs=1)
    pooled = run_digests(run, write=True, jobs=2)
    assert [d.flows[0].row for _p, d in serial] == [d.flows[0].row for _p, d in pooled]
    assert len(list(run.glob(f"*/rep*/{DIGEST}"))) == 4
    frame = pd.DataFrame([f.row for _p, d in pooled for f in d.flows])
    assert list(frame["variant"]) == ["long", "long", "short", "two", "two"]


def test_figures_drawn_by_two_workers_are_the_files_one_process_draws(tmp_path: Path) -> None:
    from plots.figures import write_figures
    run, _events = make_run(tmp_path, long=False)
    data = load_run(run, write=False)
    one = write_figures(data.groups(), tmp_path / "one", rep_groups=data.rep_groups(), jobs=1)
    two = write_figures(data.groups(), tmp_path / "two", rep_groups=data.rep_groups(), jobs=2)
    assert list(one) == list(two) and "cwnd_time" in one and "snoop_cache_time" in one
    for key, paths in one.items():
        for path, other in zip(paths, two[key]):
            assert path.name == other.name and path.read_bytes() == other.read_bytes(), path.name
