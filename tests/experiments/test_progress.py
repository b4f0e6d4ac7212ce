"""experiments.progress: tqdm on a terminal, one line per repetition otherwise."""
import io
import json
from functools import partial
from experiments.progress import DeliveryProgress


dumps = partial(json.dumps, separators=(",", ":"))   # as the logs write it


def test_without_a_terminal_nothing_is_drawn_and_the_bytes_are_counted(tmp_path):
    log = tmp_path / "D.log"
    out = io.StringIO()
    p = DeliveryProgress("aspan rep 0", 3_000_000, log, out)
    log.write_text(dumps({"t": 1, "node": "D", "ev": "deliver", "bytes": 1_000_000}) + "\n"
                   + '{"t":2,"node":"D","ev":"deliver","by')            # a line still being written
    p.poll()
    assert p.delivered == 1_000_000
    with log.open("a") as f:
        f.write('tes":2000000}\n' + dumps({"t": 3, "node": "D", "ev": "flow_end", "bytes": 3_000_000}) + "\n")
    p.poll()
    p.show(2_500_000)                      # never goes back
    p.finish()
    assert p.delivered == 3_000_000
    assert out.getvalue() == ""          # the runner prints the one line of the repetition


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_tqdm_draws_the_bar():
    out = Tty()
    p = DeliveryProgress("sack rep 1", 1_000_000, None, out)
    p.show(500_000)
    p.finish()
    text = out.getvalue()
    assert "sack rep 1" in text and "50%" in text


# ---- the sim's live line per repetition (issue 40, item 3) ---------------------------------------------------

from experiments.progress import PROGRESS_ENV, LiveLine, progress_wanted, rep_line   # noqa: E402


def test_the_line_says_the_clock_each_flows_segments_and_the_eta():
    line = rep_line("aspan rep 2", "virtual", 30.0, 120.0, [("A->D", 500, 2000), ("C->B", 100, 1000)], 6.0)
    # ETA: the clock would reach 120 s in 6 x 90 / 30 = 18 s; the flows finish in 6 x 2400 / 600 = 24 s: 18 first
    assert line == "aspan rep 2: 30.0/120 s virtual, A->D 500/2000 seg, C->B 100/1000 seg, ETA 18 s"
    fast = rep_line("r", "virtual", 10.0, 120.0, [("A->D", 1500, 2000)], 3.0)
    assert fast.endswith("ETA 1 s")              # 3 x 500 / 1500: the flow ends before the clock runs out
    assert rep_line("r", "real", 0.0, 60.0, [("A->D", 0, 10)], 0.0).endswith("ETA ?")


def test_on_a_pipe_nothing_unless_asked_on_a_terminal_redrawn(monkeypatch):
    monkeypatch.delenv(PROGRESS_ENV, raising=False)
    pipe = io.StringIO()
    assert not progress_wanted(pipe) and not LiveLine(pipe).due()
    monkeypatch.setenv(PROGRESS_ENV, "1")              # aspan run --progress
    clock = iter([0.0, 0.0, 1.0, 2.0, 6.0, 6.0]).__next__
    asked = LiveLine(pipe, wall=clock)                   # started at 0
    assert asked.due()
    asked.show("one")                                    # at 0
    assert not asked.due()                               # at 2: a pipe gets a line every 5 s at most
    assert asked.due()                                   # at 6
    asked.show("two")
    asked.done()
    assert pipe.getvalue() == "one\ntwo\n"
    monkeypatch.delenv(PROGRESS_ENV)
    tty = Tty()
    live = LiveLine(tty)
    assert live.due()
    live.show("drawn")
    live.done()
    assert tty.getvalue() == "\rdrawn\x1b[K\r\x1b[K"
