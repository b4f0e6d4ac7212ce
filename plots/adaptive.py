"""The adaptive sender judged in hindsight (issue 29): its goodput and losses against every fixed setting.

Reads the summary.csv of runs of ``experiments/adaptive-*.yaml`` and prints, per scenario, the table of
docs/REPRODUCTION.md ("The adaptive sender")::

    .venv/bin/python -m plots.adaptive RUN_DIR [RUN_DIR ...]

A later RUN_DIR's variants replace an earlier one's of the same scenario and setting (list a rerun of a
few variants after the full run).

A variant's name is ``[<scenario>-]<setting>``; the settings are ``sack``, ``classic``, ``ackall``, the
fixed A-SPAN settings ``q<pkt_qos>-<dupack rule>`` and the adaptive sender ``adaptive-<dupack rule>``.
A repetition's goodput is the mean over its flows (the grid has four); a variant's is the mean over its
repetitions.  The *best fixed setting* of a scenario is the fixed A-SPAN setting with the highest mean
goodput.  The targets (issue 29, item 3):

- within 5 % of the best fixed setting's goodput in every scenario;
- never more than 5 % below SACK;
- better than every single fixed setting averaged over the scenarios (goodput as a fraction of the
  scenario's best fixed setting, so that each scenario weighs the same);
- losses seen by the sender no higher than the best fixed setting's.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pandas as pd

SETTING = re.compile(r"^(?:(?P<scenario>.+)-)?(?P<setting>sack|classic|ackall|q\d\.\d\d-(?:every|once)|"
                     r"adaptive-(?:every|once))$")
FIXED = re.compile(r"^q\d\.\d\d-(?:every|once)$")
TOLERANCE = 0.05


def per_setting(run_dirs: list[Path]) -> pd.DataFrame:
    """One row per (scenario, setting): mean and std of goodput over repetitions, mean losses."""
    rows = []
    for d in run_dirs:
        df = pd.read_csv(d / "summary.csv")
        name = d.parent.name if d.parent.name.startswith("adaptive-") else d.name
        df["losses"] = df["losses_dupack"] + df["losses_rto"]
        rep = df.groupby(["variant", "repetition"], as_index=False).agg(goodput=("goodput_mbps", "mean"),
                                                                       losses=("losses", "sum"))
        for variant, part in rep.groupby("variant"):
            m = SETTING.match(str(variant))
            if m is None:
                continue
            scenario = name.removeprefix("adaptive-") + (f"/{m['scenario']}" if m["scenario"] else "")
            rows.append({"scenario": scenario, "setting": m["setting"], "reps": len(part),
                         "goodput": part["goodput"].mean(), "goodput_sd": part["goodput"].std(),
                         "losses": part["losses"].mean()})
    # a later run's variant replaces an earlier run's of the same scenario and setting (a rerun of a few
    # variants is listed after the full run)
    return pd.DataFrame(rows).drop_duplicates(["scenario", "setting"], keep="last").reset_index(drop=True)


def judge(table: pd.DataFrame, candidate: str = "adaptive-once") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per scenario: the candidate against the best fixed setting and SACK, with the verdicts;
    per setting: goodput as a fraction of each scenario's best fixed setting, averaged over scenarios)."""
    out = []
    norm = []
    for scenario, part in table.groupby("scenario", sort=False):
        by = part.set_index("setting")
        fixed = by[[bool(FIXED.match(s)) for s in by.index]]
        best = fixed["goodput"].idxmax()
        g_best, g_sack = fixed.loc[best, "goodput"], by.loc["sack", "goodput"]
        row = {"scenario": scenario, "best fixed": best, "best goodput": g_best,
               "sack": g_sack, "classic": by.loc["classic", "goodput"], "ackall": by.loc["ackall", "goodput"]}
        for cand in ("adaptive-once", "adaptive-every"):
            if cand in by.index:
                row[cand] = by.loc[cand, "goodput"]
                row[f"{cand} sd"] = by.loc[cand, "goodput_sd"]
        c = by.loc[candidate]
        row.update({"vs best": c["goodput"] / g_best - 1, "vs sack": c["goodput"] / g_sack - 1,
                    "losses": c["losses"], "best losses": fixed.loc[best, "losses"]})
        row["within 5 % of best"] = row["vs best"] >= -TOLERANCE
        row["not 5 % below sack"] = row["vs sack"] >= -TOLERANCE
        row["losses <= best's"] = c["losses"] <= fixed.loc[best, "losses"]
        out.append(row)
        for setting, r in by.iterrows():
            norm.append({"scenario": scenario, "setting": setting, "fraction": r["goodput"] / g_best})
    n = pd.DataFrame(norm).pivot(index="setting", columns="scenario", values="fraction")
    n["mean"] = n.mean(axis=1)
    return pd.DataFrame(out), n.sort_values("mean", ascending=False)


def markdown(verdict: pd.DataFrame, averaged: pd.DataFrame) -> str:
    """The two tables as markdown (goodput in Mbit/s, mean over repetitions; adaptive: ± std)."""
    nan = float("nan")
    lines = ["| scenario | best fixed setting | SACK | classic | ACK-all | adaptive-once | adaptive-every | "
             "once vs best | once vs SACK | losses once / best |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for d in verdict.to_dict("records"):
        lines.append(
            f"| {d['scenario']} | {d['best fixed']} {d['best goodput']:.2f} | {d['sack']:.2f} | "
            f"{d['classic']:.2f} | {d['ackall']:.2f} | "
            f"{d.get('adaptive-once', nan):.2f} ± {d.get('adaptive-once sd', nan):.2f} | "
            f"{d.get('adaptive-every', nan):.2f} ± {d.get('adaptive-every sd', nan):.2f} | "
            f"{d['vs best']:+.1%} | {d['vs sack']:+.1%} | {d['losses']:.0f} / {d['best losses']:.0f} |")
    lines += ["", "| setting | " + " | ".join(str(c) for c in averaged.columns) + " |",
              "|---|" + "---|" * len(averaged.columns)]
    for setting, r in averaged.iterrows():
        lines.append(f"| {setting} | " + " | ".join(f"{v:.2f}" for v in r) + " |")
    return "\n".join(lines)


def choices(run_dirs: list[Path]) -> pd.DataFrame:
    """What the adaptive senders chose: per (scenario, variant), over repetitions and flows, the share of
    scored epochs that ran each arm, the incumbent at the end (how many flows ended on each) and the
    switches of the incumbent, from the ``qos`` events (aspan.adaptive)."""
    from plots.logs import load_rep
    rows = {}
    for d in run_dirs:
        name = d.parent.name if d.parent.name.startswith("adaptive-") else d.name
        for vdir in sorted(p for p in d.iterdir() if p.is_dir()):
            m = SETTING.match(vdir.name)
            if m is None or not m["setting"].startswith("adaptive-"):
                continue
            scenario = name.removeprefix("adaptive-") + (f"/{m['scenario']}" if m["scenario"] else "")
            ran: dict[float, int] = {}
            final: dict[float, int] = {}
            switches = 0
            for rep in sorted(vdir.glob("rep*")):
                ev = load_rep(rep).events
                q = ev[ev["ev"] == "qos"] if "ev" in ev else ev
                for _flow, part in q.groupby("flow"):
                    scored = part[part["score_mbps"].notna()] if "score_mbps" in part else part.iloc[0:0]
                    for v in scored["pkt_qos"]:
                        ran[round(float(v), 2)] = ran.get(round(float(v), 2), 0) + 1
                    last = round(float(part["incumbent"].iloc[-1]), 2)
                    final[last] = final.get(last, 0) + 1
                    switches += int((part["decision"] == "switched").sum())
            total = sum(ran.values()) or 1
            rows[(scenario, m["setting"])] = {
                "scenario": scenario, "setting": m["setting"],
                "epochs at each pkt_qos": ", ".join(f"{k:.2f}: {v / total:.0%}" for k, v in sorted(ran.items())),
                "incumbent at the end": ", ".join(f"{k:.2f} x{v}" for k, v in sorted(final.items())),
                "switches": switches}
    return pd.DataFrame(list(rows.values()))


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    dirs = [Path(a) for a in argv]
    missing = [str(d) for d in dirs if not (d / "summary.csv").is_file()]
    if missing:
        print(f"no summary.csv in: {', '.join(missing)}", file=sys.stderr)
        return 2
    verdict, averaged = judge(per_setting(dirs))
    print(markdown(verdict, averaged))
    chosen = choices(dirs)
    if not chosen.empty:
        print("\n| scenario | sender | epochs at each pkt_qos | incumbent at the end (flows) | switches |")
        print("|---|---|---|---|---|")
        for r in chosen.to_dict("records"):
            print(f"| {r['scenario']} | {r['setting']} | {r['epochs at each pkt_qos']} | "
                  f"{r['incumbent at the end']} | {r['switches']} |")
    ok = verdict[["within 5 % of best", "not 5 % below sack", "losses <= best's"]].all(axis=None)
    best_single = averaged.drop(index=[s for s in averaged.index if s.startswith("adaptive")])["mean"].max()
    print(f"\ntargets: every scenario within 5 % of best and of SACK, losses no higher: {bool(ok)}; "
          f"adaptive-once averaged {averaged.loc['adaptive-once', 'mean']:.3f} vs the best single fixed setting "
          f"{best_single:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
