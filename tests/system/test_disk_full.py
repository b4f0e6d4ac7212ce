"""Issue 27, item 1: a disk that fills up or fails, for the nodes, the runner and the medium daemons.

The repetition that meets the full disk fails with a message naming the file and the reason, its nodes
stop, the repetitions that finished keep their rows in summary.csv, meta.json is whole (or as it was) and
``aspan run`` exits 1 (2 means a bad file: nothing ran).  The runs are made on a small tmpfs: those tests
need root (they skip without it and say why; with ASPAN_REQUIRE_ROOT_TESTS=1 they fail instead).  The
write paths themselves are tested without root, with a write that raises ENOSPC or EIO.
"""
from __future__ import annotations

import errno
import json
import os
import pytest
from experiments.records import write_whole
from routing.drivers.eventlog import WRITE_FAILED_EXIT, EventLog, WriteError, fail_process, write_failure


# ---- the write paths, without root ------------------------------------------------------------
def _failing_write(err: int):
    def write(fd, data):
        raise OSError(err, os.strerror(err))
    return write


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EIO])
def test_meta_json_is_written_whole_or_kept_as_it_was(tmp_path, monkeypatch, err):
    meta = tmp_path / "meta.json"
    write_whole(meta, '{"status": "running"}\n')
    monkeypatch.setattr(os, "write", _failing_write(err))
    with pytest.raises(WriteError) as e:
        write_whole(meta, '{"status": "ok"}\n')
    monkeypatch.undo()
    assert str(e.value) == f"cannot write {meta}: {os.strerror(err)}"
    assert json.loads(meta.read_text()) == {"status": "running"}      # kept as it was
    assert sorted(p.name for p in tmp_path.iterdir()) == ["meta.json"]   # no temporary file left


def test_a_node_log_that_cannot_be_written_names_the_file_once_and_the_exit_code_says_why(tmp_path, monkeypatch):
    log = EventLog(tmp_path / "B.log", "B", batch=True)
    log.emit(1.0, "node_start", address="10.2.1.2")
    log.flush()
    monkeypatch.setattr(os, "write", _failing_write(errno.ENOSPC))
    log.emit(2.0, "etx", value=1)
    with pytest.raises(WriteError) as e:
        log.flush()
    assert str(e.value) == f"cannot write {tmp_path / 'B.log'}: No space left on device"
    log.emit(3.0, "etx", value=2)
    log.flush()                                   # reported once: the process is ending; counted, not raised
    assert log.lines_lost == 2
    code = fail_process(log, e.value)
    monkeypatch.undo()
    log.close()
    assert code == WRITE_FAILED_EXIT + errno.ENOSPC
    assert str(write_failure(code, tmp_path / "B.log")) == str(e.value)
    assert write_failure(1, tmp_path / "B.log") is None and write_failure(-9, tmp_path / "B.log") is None
    assert (tmp_path / "B.log").read_text().count("\n") == 1   # what was written before stays whole


def test_when_space_is_back_the_last_words_reach_the_log(tmp_path, monkeypatch):
    log = EventLog(tmp_path / "B.log", "B", batch=True)
    monkeypatch.setattr(os, "write", _failing_write(errno.EIO))
    log.emit(1.0, "etx", value=1)
    with pytest.raises(WriteError) as e:
        log.flush()
    monkeypatch.undo()
    assert fail_process(log, e.value) == WRITE_FAILED_EXIT + errno.EIO
    log.close()
    [line] = (tmp_path / "B.log").read_text().splitlines()
    assert json.loads(line)["ev"] == "node_error" and "Input/output error" in json.loads(line)["error"]
