"""A fault that fails (or never happens) fails the run: testbed/run.py
records it in the run ("faults", "fault_errors"), the report says FAILED
and the runner exits non-zero; the fault's timer thread never raises.
Fake fabrics stand in for the guest's."""
import json
import os
import subprocess
import sys
import threading
import time
import types

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dcnet.testbed import report
from dcnet.testbed import run
from dcnet.wait import wait_until


class FakeFabric:
    """set_link raises for the links in `broken`; records what it did"""

    def __init__(self, broken=()):
        self.broken = set(broken)
        self.done = []

    def set_link(self, node, port, up):
        if (node, port) in self.broken:
            raise RuntimeError(f"ip -batch - failed (1): Cannot find device \"{port}\"")
        self.done.append(("up" if up else "down", node, port))

    def degrade_link(self, node, port, mbit):
        self.done.append(("degrade", node, port, mbit))


def test_apply_fault_records_a_failure_and_does_not_raise(capsys):
    fab = FakeFabric(broken={("l1", "s9")})
    rec = run.apply_fault(fab, {"at_s": 1, "node": "l1", "port": "s9", "action": "down"}, time.time())
    assert rec["applied"] is False and "Cannot find device" in rec["error"]
    assert rec["node"] == "l1" and rec["port"] == "s9" and rec["t_s"] >= 0
    assert "FAILED" in capsys.readouterr().out
    ok = run.apply_fault(fab, {"at_s": 1, "node": "l1", "port": "s2", "action": "degrade", "mbit": 1})
    assert ok["applied"] is True and ok["error"] is None
    assert fab.done == [("degrade", "l1", "s2", 1)]
    bad = run.apply_fault(fab, {"at_s": 1, "node": "l1", "port": "s2", "action": "cut"})
    assert bad["applied"] is False and "unknown action 'cut'" in bad["error"]


def test_a_failed_fault_fails_the_run_and_the_others_go_on():
    fab = FakeFabric(broken={("l1", "s1")})
    faults = run.Faults(fab, [
        {"at_s": 0.0, "node": "l1", "port": "s1", "action": "down"},       # fails
        {"at_s": 0.05, "node": "l1", "port": "s2", "action": "down"},      # after the failure: still applied
        {"at_s": 0.1, "node": "l1", "port": "s2", "action": "up"},
        {"at_s": 60, "node": "l1", "port": "s3", "action": "down"},        # the run ends first
    ])
    hook = []
    old = threading.excepthook
    threading.excepthook = lambda a: hook.append(a)     # an exception escaping a timer thread
    try:
        faults.start()
        # the three early faults fired (stop() joins a timer being applied)
        wait_until(lambda: all(r is not None for r in faults.records[:3]), 10,
                   "the faults at 0.0, 0.05 and 0.1 s fired", interval=0.005)
        t0 = time.time()
        recs, errors = faults.stop()
    finally:
        threading.excepthook = old
    assert time.time() - t0 < 5, "stop() waited for the 60 s timer"
    assert not hook
    assert fab.done == [("down", "l1", "s2"), ("up", "l1", "s2")]
    assert [r["applied"] for r in recs] == [False, True, True, False]
    assert len(errors) == 2
    assert errors[0].startswith("fault down l1:s1 at 0.0 s: ") and "Cannot find device" in errors[0]
    assert errors[1].startswith("fault down l1:s3 at 60 s: never happened")
    assert all(not t.is_alive() for t in faults.timers)


def test_no_faults_no_errors():
    faults = run.Faults(FakeFabric(), [])
    faults.start()
    assert faults.stop() == ([], [])


def raw_with(fault_errors):
    flow = dict(id=0, src="h1", dst="h2", kind="elephant", bytes=1000, duration_s=10.0, tput_bps=8e6,
                fct_us=None, intervals_bps=[8e6], deadline_us=None, met_deadline=None)
    meta = dict(platform="emulated", kernel="6.12.117-dcnet", hosts=["h1", "h2"], link_mbit=10,
                paper_link_mbit=10000, scale=0.001, started="2026-11-24T00:00:00Z", experiment={})
    fault = {"at_s": 3, "node": "l1", "port": "s1", "action": "down"}
    runs = []
    for s, errs in (("ecmp", fault_errors), ("mptcp", [])):
        runs.append(dict(scheme=s, workload="stride", duration_s=10.0, flows=[dict(flow)], ports=[], rtt_us=None,
                         cpu={"guest": 0.5}, faults=[dict(fault, applied=not errs, error=errs[0] if errs else None,
                                                          t_s=3.0)],
                         fault_errors=list(errs)))
    return dict(meta=meta, runs=runs)


def test_the_report_says_failed(tmp_path):
    raw = raw_with(["fault down l1:s1 at 3 s: Cannot find device"])
    report.validate(raw, "raw")
    res = report.build(raw, str(tmp_path), plot=False)
    assert res["failed"] == ["ecmp/stride: fault down l1:s1 at 3 s: Cannot find device"]
    assert res["runs"][0]["fault_errors"] and not res["runs"][1]["fault_errors"]
    md = (tmp_path / "report.md").read_text()
    assert "**FAILED**" in md and "ecmp/stride: fault down l1:s1" in md
    # report.py on its own (the physical path's) exits non-zero too
    (tmp_path / "raw.json").write_text(json.dumps(raw))
    r = subprocess.run([sys.executable, os.path.join(ROOT, "testbed", "report.py"), str(tmp_path / "raw.json"),
                        "--out", str(tmp_path / "r"), "--no-plots"], capture_output=True, text=True)
    assert r.returncode != 0 and "FAILED" in r.stderr


def test_a_run_without_fault_errors_is_not_failed(tmp_path):
    res = report.build(raw_with([]), str(tmp_path), plot=False)
    assert res["failed"] == []
    assert "FAILED" not in (tmp_path / "report.md").read_text()


@pytest.mark.parametrize("guest_rc,errors,want", [
    (1, ["fault down l1:s1 at 3 s: boom"], "FAILED"),   # the guest exits 1 after raw.json: a report, then exit
    (0, ["fault down l1:s1 at 3 s: boom"], "FAILED"),
    (0, [], None),
    (1, [], "the guest run failed"),
])
def test_host_fails_a_run_with_fault_errors(tmp_path, monkeypatch, capsys, guest_rc, errors, want):
    """host_main with a stand-in for scripts/vmrun.py (no boot)"""
    out = tmp_path / "out"
    out.mkdir()
    (out / "raw.json").write_text("{}")       # an earlier run's: must not pass for this one's
    monkeypatch.setattr(report, "plots", lambda raw, res, out: [])

    def fake_vmrun(argv, **kw):
        assert argv[1:3] == ["-m", "dcnet.host.vmrun"] and kw.get("cwd") == run.ROOT
        assert not (out / "raw.json").exists()
        (out / "guest.log").write_text("guest says hi\n")
        (out / "raw.json").write_text(json.dumps(raw_with(errors)))
        return subprocess.CompletedProcess(argv, guest_rc)
    monkeypatch.setattr(run.subprocess, "run", fake_vmrun)
    a = types.SimpleNamespace(experiment=os.path.join(ROOT, "testbed", "experiments", "default.json"),
                              out=str(out), duration=0, kernel="/nonexistent", timeout=10,
                              clock="real", repeat=1)
    if want is None:
        run.host_main(a)
    else:
        with pytest.raises(SystemExit) as ei:
            run.host_main(a)
        assert want in str(ei.value.code)
    if errors:
        assert "**FAILED**" in (out / "report.md").read_text()
        assert "FAILED" in capsys.readouterr().out


def test_guest_exits_non_zero_after_writing_raw(tmp_path, monkeypatch):
    """guest_main writes raw.json with the fault errors, then exits 1"""
    from dcnet.testbed import fabric
    from dcnet.testbed import netlab

    class Fab:
        hosts = {"h1": None, "h2": None}
        t_build = 0.0

        def __init__(self, topo, mode, subflows, hash_seed=None, flowcell_bytes=None, hash_fields=None):
            pass

        def close(self):
            pass

    def fake_run_one(fab, scheme, wl, flows, exp):
        rec = dict(id=0, src="h1", dst="h2", kind="elephant", bytes=1, duration_s=1.0, tput_bps=1.0, fct_us=None,
                   intervals_bps=[], deadline_us=None, met_deadline=None)
        errs = ["fault down l1:s1 at 3 s: boom"] if scheme["name"] == "ecmp" else []
        return dict(scheme=scheme["name"], workload=wl["name"], duration_s=1.0, flows=[rec], ports=[],
                    rtt_us=None, cpu=None, faults=[], fault_errors=errs)
    monkeypatch.setattr(fabric, "Fabric", Fab)
    monkeypatch.setattr(netlab, "allow_congestion_controls", lambda names: None)
    monkeypatch.setattr(run, "run_one", fake_run_one)
    import dcnet.warm
    monkeypatch.setattr(dcnet.warm, "install_for_guest", lambda: {"dltraffic": run.DLTRAFFIC})
    monkeypatch.setattr(run.subprocess, "run", lambda *a, **kw: subprocess.CompletedProcess(a, 0))
    monkeypatch.setenv("DCNET_OUT", str(tmp_path))
    a = types.SimpleNamespace(experiment=os.path.join(ROOT, "testbed", "experiments", "default.json"),
                              out=str(tmp_path), duration=0)
    with pytest.raises(SystemExit) as ei:
        run.guest_main(a)
    assert ei.value.code == 1
    raw = json.loads((tmp_path / "raw.json").read_text())
    assert run.run_failures(raw) == ["ecmp/stride: fault down l1:s1 at 3 s: boom",
                                     "ecmp/bijection: fault down l1:s1 at 3 s: boom"]


def test_rtt_series_puts_samples_on_the_runs_clock():
    """the probe's send times against the measured interval's start;
    no series (not a wrong one) when they are on another clock"""
    samples = [(1000.5, 80.0), (1001.25, 90.0), (1007.0, 100.0)]
    assert run.rtt_series(samples, 1000.0) == [[0.5, 80.0], [1.25, 90.0], [7.0, 100.0]]
    assert run.rtt_series(samples, 1.7e9) is None
    assert run.rtt_series(samples, 1107.0) is None


def test_parse_fulllog_keeps_the_series_only_when_asked(tmp_path):
    log = tmp_path / "full.csv"
    body = "------------------------------\npacket, txTime(sec), rxTime(sec), latency(usec)\n" + \
        "".join(f"{i}, {100 + i * 0.5:.6f}, {100 + i * 0.5 + 0.001:.6f}, {50 + i}.000\n" for i in range(10))
    log.write_text(body)
    rec = run.parse_fulllog(str(log), 100.0)
    assert rec["n"] == 10 and rec["p50"] == pytest.approx(2 * 54.5, abs=2)
    assert rec["series"][0] == [0.0, 100.0] and rec["series"][-1] == [4.5, 118.0]
    log.write_text(body)
    assert "series" not in run.parse_fulllog(str(log))


def test_stages_cut_a_run_at_its_faults(tmp_path):
    """Presto Figs. 17-18: throughput and RTT before the first fault,
    between, after the last; the first second and the seconds a fault
    lands in are left out; the controller's stage times are listed"""
    meta = dict(platform="emulated", kernel="k", hosts=["h1", "h2"], link_mbit=10, paper_link_mbit=10000, scale=0.001,
                started="now", experiment={})
    ivs = [1e6] + [8e6] * 4 + [3e6] + [6e6] * 4 + [5e6] + [4e6] * 4
    flows = [dict(id=i, src="h1", dst="h2", kind="elephant", bytes=1, duration_s=15.0, tput_bps=6e6,
                  fct_us=None, intervals_bps=[x * (1 + i) for x in ivs], deadline_us=None, met_deadline=None)
             for i in range(2)]
    series = [[t / 10, 100.0 if t < 50 else (1000.0 if t < 101 else 5000.0)] for t in range(30, 140)]
    rtt = dict(n=len(series), p50=1000.0, p90=5000.0, p99=5000.0, p999=5000.0, cdf=[[100.0, 0.0]], series=series)
    faults = [dict(at_s=5, node="l1", port="s1", action="down", applied=True, error=None, t_s=5.02),
              dict(at_s=10, node="l2", port="s2", action="degrade", mbit=2.5, applied=True, error=None, t_s=10.01)]
    r = dict(scheme="presto", workload="stride", duration_s=15.0, flows=flows, ports=[], rtt_us=rtt,
             cpu={"guest": 0.3}, faults=faults, fault_errors=[],
             controller_events=[dict(cause="down l1:s1", fabric_s=0.012, groups_s=0.4, groups_changed=24)])
    plain = dict(r, scheme="l2ecmp", faults=[], controller_events=None, rtt_us=dict(rtt, series=None))
    res = report.build(dict(meta=meta, runs=[r, plain]), str(tmp_path), plot=False)
    st = res["runs"][0]["stages"]
    assert [x["stage"] for x in st["stages"]] == ["before", "after down l1:s1", "after degrade l2:s2"]
    # seconds 1-4, 6-9, 11-14: the mean of the two flows (x1, x2)
    assert [x["seconds"] for x in st["stages"]] == [4, 4, 4]
    assert [x["mean_bps"] for x in st["stages"]] == [pytest.approx(12e6), pytest.approx(9e6), pytest.approx(6e6)]
    assert [x["min_bps"] for x in st["stages"]] == [pytest.approx(8e6), pytest.approx(6e6), pytest.approx(4e6)]
    assert [x["rtt_p50_us"] for x in st["stages"]] == [100.0, 1000.0, 5000.0]
    assert [x["rtt_n"] for x in st["stages"]] == [21, 50, 39]
    assert st["controller"][0]["groups_changed"] == 24
    assert "series" not in res["runs"][0]["rtt_us"]
    assert res["runs"][1]["stages"] is None
    md = (tmp_path / "report.md").read_text()
    assert "## Stages of a failure (Presto Figs. 17-18)" in md
    assert "| presto | stride | after down l1:s1 | 5.02-10.01 | 4 | 9.00 | 75% | 6.00 |" in md
    assert "| presto | stride | down l1:s1 | - | - | 0.012 | 0.400 | 24 |" in md
    # iperf3's 0.5 s intervals (interval_s): the same stages, the fault's half second left out
    for f in flows:
        f["intervals_bps"] = [x for x in f["intervals_bps"] for _ in (0, 1)]
        f["interval_s"] = 0.5
    res = report.build(dict(meta=meta, runs=[r]), str(tmp_path), plot=False)
    st = res["runs"][0]["stages"]["stages"]
    assert [x["seconds"] for x in st] == [4.0, 4.5, 4.5]
    assert st[0]["mean_bps"] == pytest.approx(12e6)
    # 5.5-10 s: the second half of second 5 (3 and 6 Mbit/s) and eight at 6 and 12
    assert st[1]["mean_bps"] == pytest.approx((8 * 9e6 + 4.5e6) / 9)
