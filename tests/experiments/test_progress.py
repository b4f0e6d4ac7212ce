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
