"""dcnet/progress.py: the progress lines of long runs (per cell, per test
file), their estimate of what is left, and the readers that print them as
the guest writes."""
import io
import json
import re

from dcnet import progress
from dcnet.host import vmrun


def test_durations_read_as_a_person_would():
    assert progress.duration(None) == "?"
    assert progress.duration(0) == "0 s"
    assert progress.duration(45.4) == "45 s"
    assert progress.duration(99) == "99 s"
    assert progress.duration(100) == "2 min"
    assert progress.duration(12 * 60 + 10) == "12 min"
    assert progress.duration(65 * 60) == "65 min"
    assert progress.duration(100 * 60) == "1 h 40 min"
    assert progress.duration(3 * 3600 + 5 * 60) == "3 h 05 min"


def test_the_estimate_is_wall_per_work_done_times_work_left():
    assert progress.estimate_left(100, 0, 5) is None         # nothing done: no estimate
    assert progress.estimate_left(100, 2, 3) == 150
    assert progress.estimate_left(100, 2, 0) == 0
    assert progress.estimate_left(300, 600.0, 1200.0) == 600   # work as recorded seconds


def test_a_cell_line_parses_back_behind_any_prefix():
    line = progress.cell_line("ecmp/stride", 3, 12, 41.25, 130.04)
    rec = progress.parse("guest: " + line)
    assert rec == {"cell": "ecmp/stride", "done": 3, "total": 12, "cell_guest_s": 41.2, "guest_s": 130.0}
    assert progress.parse("ecmp stride built in 3 s") is None
    assert progress.parse(progress.MARK + "{not json") is None
    assert progress.parse(progress.MARK + json.dumps({"cell": "x"})) is None


def test_the_guest_counts_its_cells_in_its_own_clock():
    t = iter([100.0, 130.0, 190.5])
    out = io.StringIO()
    cells = progress.Cells(2, clock=lambda: next(t), out=out)
    cells.done("fig6 dctcp rep 0")
    cells.done("fig6 d2tcp rep 0")
    recs = [progress.parse(line) for line in out.getvalue().splitlines()]
    assert [(r["cell"], r["done"], r["total"], r["cell_guest_s"], r["guest_s"]) for r in recs] == [
        ("fig6 dctcp rep 0", 1, 2, 30.0, 30.0), ("fig6 d2tcp rep 0", 2, 2, 60.5, 90.5)]


def test_cell_done_without_start_prints_nothing(capsys):
    progress._CELLS.clear()
    assert progress.cell_done("x") is None
    assert capsys.readouterr().out == ""
    progress.start(1)
    assert progress.cell_done("x").startswith(progress.MARK)
    progress._CELLS.clear()


def test_the_host_line_gives_cell_count_times_and_estimate():
    tr = progress.Tracker("run1")
    a = tr.cell({"cell": "ecmp/stride", "done": 1, "total": 4, "cell_guest_s": 30.0}, 120)
    assert a == ("progress run1: ecmp/stride done, 1/4 cells; this cell 30 s guest, 2 min wall; "
                 "2 min wall so far, about 6 min left")
    b = tr.cell({"cell": "ecmp/random", "done": 2, "total": 4, "cell_guest_s": 31.0}, 300)
    assert "2/4 cells" in b and "this cell 31 s guest, 3 min wall" in b and "about 5 min left" in b
    c = progress.Tracker().cell({"cell": "mptcp/random", "done": 4, "total": 4, "cell_guest_s": 5}, 600)
    assert c.startswith("progress: mptcp/random done, 4/4 cells") and c.endswith("all done")


def events(*evs):
    return [dict(e) for e in evs]


def test_check_prints_each_test_file_as_it_finishes():
    files = ["tests/guest/test_a.py", "tests/guest/test_b.py", "tests/guest/test_c.py"]
    f = progress.Files("vm1", files, {"tests/guest/test_a.py": 100, "tests/guest/test_b.py": 200,
                                      "tests/guest/test_c.py": 300})
    lines = []
    for ev, wall in [({"event": "start", "test": "tests/guest/test_a.py::t1", "t": 10.0}, 10),
                     ({"event": "result", "test": "tests/guest/test_a.py::t1", "when": "call",
                       "outcome": "passed", "t": 50.0}, 50),
                     ({"event": "start", "test": "tests/guest/test_a.py::t2", "t": 50.0}, 50),
                     ({"event": "result", "test": "tests/guest/test_a.py::t2", "when": "setup",
                       "outcome": "failed", "t": 60.0}, 60),
                     ({"event": "result", "test": "tests/guest/test_a.py::t2", "when": "teardown",
                       "outcome": "failed", "t": 61.0}, 61),
                     ({"event": "start", "test": "tests/guest/test_b.py::t1", "t": 70.0}, 80),
                     ({"event": "result", "test": "tests/guest/test_b.py::t1", "when": "call",
                       "outcome": "skipped", "t": 71.0}, 81)]:
        lines += f.feed(ev, wall)
    assert lines == ["progress vm1: tests/guest/test_a.py: 1 passed, 1 failed; guest 51 s, wall 70 s; "
                     "1/3 files done, 2 left, about 7 min to go"]
    end = f.end(200)
    assert len(end) == 1 and end[0].startswith("progress vm1: tests/guest/test_b.py: 0 passed, 0 failed, "
                                               "1 skipped; guest 1 s, wall 2 min; 2/3 files done, 1 left")
    # 200 s of wall for 300 s of recorded work: 300 s left is about 200 s
    assert end[0].endswith("about 3 min to go")
    assert f.end(300) == []


def test_a_file_outside_the_shard_still_counts():
    f = progress.Files("vm0", ["tests/guest/test_a.py"], {})
    f.feed({"event": "start", "test": "tests/guest/test_z.py::t", "t": 1}, 1)
    out = f.end(5)
    assert out and "tests/guest/test_z.py" in out[0] and "1/2 files done" in out[0]


def test_jsonl_is_read_as_it_grows(tmp_path):
    p = tmp_path / "guest-results.jsonl"
    assert progress.follow_jsonl(str(p), 0) == ([], 0, b"")
    p.write_text('{"event": "start", "test": "a::b"}\n{"event": "res')
    evs, pos, tail = progress.follow_jsonl(str(p), 0)
    assert evs == [{"event": "start", "test": "a::b"}] and tail == b'{"event": "res'
    with open(p, "a") as fh:
        fh.write('ult", "test": "a::b"}\n')
    evs, pos, tail = progress.follow_jsonl(str(p), pos, tail)
    assert evs == [{"event": "result", "test": "a::b"}] and tail == b""


def test_the_console_follower_prints_progress_lines(tmp_path, capsys):
    con = tmp_path / "console.log.serial"
    con.write_text("booting\n" + progress.cell_line("ecmp/stride", 1, 2, 12.0, 12.0) + "\nmore output\n")
    f = vmrun.Follow(str(con), name="run2")
    f.poll()
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "guest: booting"
    assert re.match(r"progress run2: ecmp/stride done, 1/2 cells; this cell 12 s guest, \d+ s wall", err[1])
    assert err[2] == "guest: more output"
    # a 9p guest's log: only the progress lines
    log = tmp_path / "guest.log"
    log.write_text("pytest noise\n" + progress.cell_line("l2/stride", 2, 2, 3.0) + "\n")
    f = vmrun.Follow(str(log), only_progress=True)
    f.poll()
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("progress: l2/stride done, 2/2 cells") and "all done" in err[0]


def test_a_minute_without_a_cell_still_prints_where_the_run_is(tmp_path, capsys):
    tr = progress.Tracker()
    assert tr.beat(75) == "progress: setting up or in the first cell, 75 s wall so far"
    tr.cell({"cell": "a", "done": 1, "total": 3, "cell_guest_s": 1.0}, 120)
    # 120 s per cell: 240 s left at the cell's end, 60 s of them gone
    assert tr.beat(180) == "progress: cell 2/3 running for 60 s; 3 min wall so far, about 3 min left"
    con = tmp_path / "console"
    con.write_text("")
    f = vmrun.Follow(str(con))
    t0 = f.t0
    assert f.heartbeat(t0 + 30) is None
    assert f.heartbeat(t0 + 61).startswith("progress: setting up")
    assert f.heartbeat(t0 + 90) is None            # one a minute
    assert f.heartbeat(t0 + 122) is not None
    # a 9p log (make check's VMs): no heartbeat before the first cell
    g = vmrun.Follow(str(con), only_progress=True)
    assert g.heartbeat(g.t0 + 300) is None
    capsys.readouterr()
