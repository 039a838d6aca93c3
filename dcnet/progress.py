"""Progress of a long run, as it goes: which cell or test file finished,
how many are done and left, its guest and wall time, and an estimate of
what is left.

Two sources, one format:

- a measurement's guest (testbed, benches) prints one line per finished
  cell, `DCNET-PROGRESS {"cell": ..., "done": n, "total": N,
  "cell_guest_s": s, "guest_s": s}` (start(), cell_done()).  The
  guest's output reaches the host as it runs (a
  sealed guest's console, read by dcnet/host/vmrun.py's Follow; a 9p
  guest's log), and the host turns each such line into a progress line
  with the wall time it measures itself (Tracker.cell());
- make check's guest phase reads each VM's guest-results.jsonl (one JSON
  line per test event, dcnet/host/pytest_jsonl.py) as it grows and prints
  a line per finished test file (Files).

The estimate of what is left: the wall time so far per unit of expected
work done, times the expected work left.  The expected work of a cell is
1 (cells of one run are alike); that of a test file is its recorded
duration (tests/guest/durations.json).  Before anything is done there is
no estimate.
"""
import json
import time

MARK = "DCNET-PROGRESS "


def cell_line(cell, done, total, cell_guest_s, guest_s=None):
    """the line a guest prints when a cell is done: its name, how many of
    how many are done, the cell's guest seconds and the guest seconds
    since the run's first cell started"""
    rec = {"cell": cell, "done": done, "total": total, "cell_guest_s": round(cell_guest_s, 1)}
    if guest_s is not None:
        rec["guest_s"] = round(guest_s, 1)
    return MARK + json.dumps(rec, sort_keys=True)


class Cells:
    """the guest's side: start(total) before the first cell, then done(name)
    after each (times in the guest's clock: virtual time in a sealed guest)"""

    def __init__(self, total, clock=time.time, out=None):
        self.total, self.n, self.clock, self.out = total, 0, clock, out
        self.t0 = self.last = clock()

    def done(self, name):
        now = self.clock()
        self.n += 1
        line = cell_line(name, self.n, self.total, now - self.last, now - self.t0)
        self.last = now
        print(line, flush=True, file=self.out)
        return line


_CELLS = []


def start(total):
    """a guest program's cells begin: total of them"""
    _CELLS[:] = [Cells(total)]
    return _CELLS[0]


def cell_done(name):
    """a cell of the program that called start() is done (nothing otherwise)"""
    return _CELLS[0].done(name) if _CELLS else None


def parse(line):
    """the record of a progress line (a prefix before MARK is allowed), or None"""
    at = line.find(MARK)
    if at < 0:
        return None
    try:
        rec = json.loads(line[at + len(MARK):])
    except ValueError:
        return None
    if not isinstance(rec, dict) or not all(k in rec for k in ("cell", "done", "total")):
        return None
    return rec


def duration(s):
    """seconds as '45 s', '12 min', '1 h 05 min'"""
    if s is None:
        return "?"
    s = max(0, int(round(s)))
    if s < 100:
        return f"{s} s"
    m = (s + 30) // 60
    if m < 100:
        return f"{m} min"
    return f"{m // 60} h {m % 60:02d} min"


def estimate_left(wall_s, work_done, work_left):
    """seconds left: wall time so far per unit of work done, times the
    work left; None before any work is done"""
    if work_done <= 0:
        return None
    return wall_s / work_done * work_left


class Tracker:
    """the cells of one boot; cell() takes a guest's record and the wall
    seconds since the boot started and returns the line to print"""

    def __init__(self, name=""):
        self.name = name
        self.last_wall = 0.0
        self.done = self.total = None

    def beat(self, wall_s):
        """the line for a minute without a cell done: where the run is"""
        who = f"progress{' ' + self.name if self.name else ''}: "
        if self.total is None:
            return who + f"setting up or in the first cell, {duration(wall_s)} wall so far"
        left = estimate_left(self.last_wall, self.done, self.total - self.done)
        return (who + f"cell {min(self.done + 1, self.total)}/{self.total} running for "
                f"{duration(wall_s - self.last_wall)}; {duration(wall_s)} wall so far"
                + (f", about {duration(max(0, left - (wall_s - self.last_wall)))} left" if left is not None
                   and self.done < self.total else ""))

    def cell(self, rec, wall_s):
        done, total = int(rec["done"]), int(rec["total"])
        cell_guest = rec.get("cell_guest_s")
        cell_wall = wall_s - self.last_wall
        self.last_wall = wall_s
        self.done, self.total = done, total
        left = estimate_left(wall_s, done, total - done)
        return (f"progress{' ' + self.name if self.name else ''}: {rec['cell']} done, {done}/{total} cells; "
                f"this cell {duration(cell_guest) if cell_guest is not None else '?'} guest, "
                f"{duration(cell_wall)} wall; {duration(wall_s)} wall so far"
                + (f", about {duration(left)} left" if left is not None and done < total else
                   ", all done" if done >= total else ""))


class Files:
    """make check's guest phase, one VM: its test files in the order pytest
    runs them, each with its expected seconds; feed() takes the JSONL
    events as they come and returns a line for each file that finished."""

    def __init__(self, name, files, expected):
        self.name = name
        self.files = list(files)
        self.expected = {f: float(expected.get(f, 0) or 0) for f in self.files}
        self.counts = {f: {"passed": 0, "failed": 0, "skipped": 0} for f in self.files}
        self.guest = {f: 0.0 for f in self.files}
        self.start_t = {}
        self.seen = {}          # test -> the outcome counted for it
        self.current = None
        self.finished = []
        self.file_wall0 = 0.0

    @staticmethod
    def file_of(test):
        return test.split("::", 1)[0]

    def feed(self, ev, wall_s):
        """one event ({"event": "start"|"result", "test": ID, ...}) seen at
        wall_s seconds since the phase began; returns lines to print"""
        out = []
        test = ev.get("test")
        if not test:
            return out
        f = self.file_of(test)
        if f not in self.counts:
            self.files.append(f)
            self.expected[f] = 0.0
            self.counts[f] = {"passed": 0, "failed": 0, "skipped": 0}
            self.guest[f] = 0.0
        if ev.get("event") == "start":
            if self.current is not None and f != self.current:
                out.append(self.finish(self.current, wall_s))
            if self.current != f:
                self.current = f
                self.file_wall0 = wall_s
            self.start_t[test] = ev.get("t")
        elif ev.get("event") == "result":
            outcome = ev.get("outcome")
            if ev.get("when") == "call" or outcome != "passed":
                key = outcome if outcome in self.counts[f] else "failed"
                # a test's worst phase counts, once (setup error + teardown: one failure)
                seen = self.seen
                rank = {"passed": 0, "skipped": 1, "failed": 2}
                prev = seen.get(test)
                if prev is None or rank[key] > rank[prev]:
                    if prev is not None:
                        self.counts[f][prev] -= 1
                    self.counts[f][key] += 1
                    seen[test] = key
            t0, t = self.start_t.get(test), ev.get("t")
            if t0 is not None and t is not None:
                self.guest[f] = self.guest.get(f, 0.0) + max(0.0, t - t0)
                self.start_t[test] = t
        return out

    def end(self, wall_s):
        """the run ended: the file in progress is done"""
        if self.current is not None and self.current not in self.finished:
            return [self.finish(self.current, wall_s)]
        return []

    def finish(self, f, wall_s):
        self.finished.append(f)
        c = self.counts[f]
        done = len(self.finished)
        left_files = [x for x in self.files if x not in self.finished]
        work_done = sum(self.expected[x] for x in self.finished)
        left = estimate_left(wall_s, work_done, sum(self.expected[x] for x in left_files))
        return (f"progress {self.name}: {f}: {c['passed']} passed, {c['failed']} failed"
                + (f", {c['skipped']} skipped" if c["skipped"] else "")
                + f"; guest {duration(self.guest.get(f, 0.0))}, wall {duration(wall_s - self.file_wall0)}; "
                f"{done}/{len(self.files)} files done, {len(left_files)} left"
                + (f", about {duration(left)} to go" if left is not None and left_files else ""))


def follow_jsonl(path, pos, partial=b""):
    """the complete JSON lines a file gained since byte pos: (events, new
    pos, the incomplete tail)"""
    try:
        with open(path, "rb") as f:
            f.seek(pos)
            data = f.read()
    except OSError:
        return [], pos, partial
    pos += len(data)
    lines = (partial + data).split(b"\n")
    partial = lines.pop()
    evs = []
    for line in lines:
        try:
            evs.append(json.loads(line))
        except ValueError:
            continue
    return evs, pos, partial
