#!/usr/bin/env python3
"""The summary of `make check`: counts every result once, per suite, and
fails on anything that did not pass or did not report.

    check_summary.py OUT --host-rc N [--guest --vm-ok 0|1 [--vms N]] [--kunit-modules FILE]

Sources, all under OUT:
  host-junit.xml             the host pytest suite (its exit status is --host-rc:
                             0 or 1 with a junit file is a run; anything else,
                             e.g. a collection error or a crash, is a failure)
  guest/guest-results.jsonl  the guest pytest suite, one line per test event as
                             it happened (dcnet/host/pytest_jsonl.py): a test that
                             started and never reported hung or the VM died;
                             with --vms N, VM 1..N-1 wrote guest-1/, ...: each
                             VM's part is counted, and a VM that ran nothing fails
  guest/kunit-SUITE.ktap     (VM 0 only) one KUnit suite each; every module in
                             tests/guest/kunit-modules must report, with at least
                             one case and its suite's closing line
Prints one line per suite, each failure, and "N passed, N failed[, N skipped]".
Exit 1 on any failure or when nothing passed.
"""
import argparse
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

from dcnet import ROOT


class Tally:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0
        self.fails = []
        self.suites = []

    def suite(self, name, p, f, s, note=""):
        self.passed += p
        self.failed += f
        self.skipped += s
        self.suites.append(f"{name}: {p} passed, {f} failed, {s} skipped{note}")

    def fail(self, what):
        self.fails.append(what)


def host(t, out, rc):
    path = os.path.join(out, "host-junit.xml")
    p = f = s = 0
    if os.path.exists(path):
        for tc in ET.parse(path).getroot().iter("testcase"):
            name = f"{tc.get('classname')}::{tc.get('name')}"
            if tc.find("failure") is not None or tc.find("error") is not None:
                f += 1
                t.fail(f"host: {name}")
            elif tc.find("skipped") is not None:
                s += 1
            else:
                p += 1
    else:
        f += 1
        t.fail("host: no results (host-junit.xml missing)")
    if rc not in (0, 1) or (rc == 1 and f == 0):
        # pytest's 2-5: interrupted, internal error, usage error, no tests
        f += 1
        t.fail(f"host: pytest exited {rc}")
    t.suite("host pytest", p, f, s)


def guest_pytest(t, gdir, name="guest pytest"):
    path = os.path.join(gdir, "guest-results.jsonl")
    if not os.path.exists(path):
        t.suite(name, 0, 1, 0)
        t.fail(f"{name}: no results (guest-results.jsonl missing: the suite never started)")
        return
    order, outcome, started, why = [], {}, None, {}
    rank = {"passed": 0, "skipped": 1, "failed": 2}
    with open(path, errors="replace") as fh:
        for line in fh:
            try:
                ev = json.loads(line)
            except ValueError:
                continue        # a line cut short by the VM's end
            test = ev.get("test")
            if ev.get("event") == "start":
                started = test
                if test not in outcome:
                    order.append(test)
                    outcome[test] = None
            elif ev.get("event") == "result":
                if test not in outcome:
                    order.append(test)
                    outcome[test] = None
                o = ev.get("outcome", "failed")
                if ev.get("reason") and test not in why:
                    why[test] = ev["reason"]
                if outcome[test] is None or rank.get(o, 2) > rank.get(outcome[test], 2):
                    outcome[test] = o
    p = f = s = 0
    for test in order:
        o = outcome[test]
        if o == "passed":
            p += 1
        elif o == "skipped":
            s += 1
        elif o is None:
            f += 1
            t.fail(f"guest: {test} started and never finished (hung, or the VM died)"
                   if test == started else f"guest: {test} reported nothing")
        else:
            f += 1
            t.fail(f"guest: {test}" + (f": {why[test]}" if test in why else ""))
    if not order:
        f += 1
        t.fail(f"{name}: no test ran")
    t.suite(name, p, f, s)


CASE = re.compile(r"^\s{4}(not ok|ok) \d+ (\S+)(.*)$")
TOP = re.compile(r"^(not ok|ok) \d+ (\S+)(.*)$")


def kunit(t, gdir, modules):
    for m in modules:
        suite = m[:-len("_kunit")] if m.endswith("_kunit") else m
        path = os.path.join(gdir, f"kunit-{suite}.ktap")
        if not os.path.exists(path):
            t.suite(f"kunit {suite}", 0, 1, 0)
            t.fail(f"kunit: {suite}: no results")
            continue
        p = f = s = 0
        top = None
        for line in open(path, errors="replace"):
            m1 = CASE.match(line)
            if m1:
                if "# SKIP" in m1.group(3):
                    s += 1
                elif m1.group(1) == "ok":
                    p += 1
                else:
                    f += 1
                    t.fail(f"kunit: {suite}.{m1.group(2)}")
                continue
            m0 = TOP.match(line)
            if m0:
                top = m0
        note = ""
        if p + f + s == 0:
            f += 1
            why = top.group(3).strip(" #") if top else "no test case reported"
            t.fail(f"kunit: {suite}: {why}")
            note = f" ({why})"
        elif top is None:
            f += 1
            t.fail(f"kunit: {suite}: the suite did not finish")
        elif top.group(1) != "ok" and f == 0:
            f += 1
            t.fail(f"kunit: {suite}: suite reported not ok")
        t.suite(f"kunit {suite}", p, f, s, note)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--host-rc", type=int, required=True)
    ap.add_argument("--guest", action="store_true")
    ap.add_argument("--vm-ok", type=int, default=1)
    ap.add_argument("--vms", type=int, default=1, help="VMs the guest suite was split over")
    ap.add_argument("--kunit-modules", default=os.path.join(
        ROOT, "tests", "guest", "kunit-modules"))
    a = ap.parse_args(argv)
    t = Tally()
    host(t, a.out, a.host_rc)
    if a.guest:
        gdir = os.path.join(a.out, "guest")
        with open(a.kunit_modules) as fh:
            modules = [l.strip() for l in fh if l.strip() and not l.startswith("#")]
        kunit(t, gdir, modules)
        if a.vms == 1:
            guest_pytest(t, gdir)
        for i in range(a.vms if a.vms > 1 else 0):
            guest_pytest(t, gdir if i == 0 else f"{gdir}-{i}", f"guest pytest vm{i}")
        if not a.vm_ok:
            t.failed += 1
            t.fail("vm: the guest failed, hung or the kernel splatted (see above)")
    for line in t.suites:
        print(f"  {line}")
    for f in t.fails:
        print(f"FAILED {f}")
    line = f"{t.passed} passed, {t.failed} failed"
    if t.skipped:
        line += f", {t.skipped} skipped"
    print(line)
    return 1 if t.failed or t.passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
