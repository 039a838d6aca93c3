"""pytest plugin: one JSON line per test event, written and flushed as it
happens, so that a hang or a dead VM still leaves what passed and which
test was running.  Load with `-p dcnet.host.pytest_jsonl` (the repository on PYTHONPATH);
the file is $DCNET_JSONL (nothing is written when it is unset).

Lines: {"event": "start", "test": ID} before a test runs, then
{"event": "result", "test": ID, "when": "setup|call|teardown",
"outcome": "passed|failed|skipped", "duration": S} for the call and for
any phase that did not pass; a failure's line also has "reason", its
report's "E" lines (what the assertion saw), cut to 600 characters.  scripts/check_summary.py reads them.
"""
import json
import os
import time

from dcnet import config as dcnet_config

_FILE = []


def _write(**rec):
    if not _FILE:
        return
    f = _FILE[0]
    rec["t"] = round(time.monotonic(), 3)
    f.write(json.dumps(rec) + "\n")
    f.flush()
    os.fsync(f.fileno())


def pytest_configure(config):
    path = dcnet_config.get("DCNET_JSONL")
    if path and not _FILE:
        _FILE.append(open(path, "a"))


def pytest_unconfigure(config):
    while _FILE:
        _FILE.pop().close()


def pytest_runtest_logstart(nodeid, location):
    _write(event="start", test=nodeid)


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        rec = dict(event="result", test=report.nodeid, when=report.when,
                   outcome=report.outcome, duration=round(report.duration, 3))
        if report.failed:
            rec["reason"] = reason(report.longreprtext)
        _write(**rec)


def reason(text, limit=600):
    """what a failure's report says went wrong: its "E   " lines (the
    assertion and its values), else its last line, at most limit chars"""
    lines = [l[1:].strip() for l in text.splitlines() if l.startswith("E ")]
    if not lines:
        lines = [l.strip() for l in text.splitlines() if l.strip()][-1:]
    out = " | ".join(lines)
    return out if len(out) <= limit else out[:limit - 3] + "..."
