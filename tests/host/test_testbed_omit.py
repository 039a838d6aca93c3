"""The elephants' warm-up (experiment key omit_s): iperf3 --omit leaves
it out of their throughput, the omitted intervals are dropped from the
record, and what is timed (sized flows, faults) moves into the measured
interval.  testbed/run.py and testbed/experiment.py on the host."""
import json
import os
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dcnet.testbed import experiment
from dcnet.testbed import run
from dcnet.testbed import workloads
from dcnet.wait import wait_until

FLOW = dict(id=3, src="h1", dst="h9", kind="elephant", port=5204)


def iperf_json(omitted, measured):
    """iperf3 -J --get-server-output as the client prints it with -O"""
    ivs = [{"sum": {"bits_per_second": b, "omitted": True}} for b in omitted] + \
          [{"sum": {"bits_per_second": b, "omitted": False}} for b in measured]
    return json.dumps({"end": {"sum_received": {"bytes": 12_000_000, "bits_per_second": 9.6e6}},
                       "server_output_json": {"intervals": ivs}})


def test_omitted_intervals_are_left_out_of_the_record():
    rec = run.iperf_record(FLOW, iperf_json([2e6, 3e6, 4e6], [9e6, 9.5e6]), 10)
    assert rec["intervals_bps"] == [9e6, 9.5e6]
    assert rec["tput_bps"] == 9.6e6 and rec["bytes"] == 12_000_000 and rec["duration_s"] == 10
    # without -O iperf3 flags nothing and every interval stays
    rec = run.iperf_record(FLOW, iperf_json([], [1e6, 2e6]), 10)
    assert rec["intervals_bps"] == [1e6, 2e6]


def test_timed_sized_flows_move_by_the_warm_up():
    class Fab:
        def ip(self, h, v6=False):
            return "127.0.0.1"
    hosts = [f"h{i}" for i in range(1, 5)]
    mice = workloads.generate("mice", hosts, count=4, duration_s=2)
    base = run.sized_schedules(Fab(), mice)
    late = run.sized_schedules(Fab(), mice, 10)
    assert sorted(base) == sorted(late)
    for k in base:
        a = [int(x.split()[3]) for x in base[k].splitlines()]
        b = [int(x.split()[3]) for x in late[k].splitlines()]
        assert b == [x + 10_000_000 for x in a]


def test_faults_count_from_the_end_of_the_warm_up():
    class Fab:
        def __init__(self):
            self.at = []

        def set_link(self, node, port, up):
            self.at.append(time.time())
    fab = Fab()
    faults = run.Faults(fab, [{"at_s": 0.1, "node": "l1", "port": "s1", "action": "down"}], 0.3)
    t0 = time.time()
    faults.start()
    wait_until(lambda: fab.at, 10, "the fault at 0.1 s after a 0.3 s warm-up was applied")
    recs, errors = faults.stop()
    assert errors == [] and recs[0]["applied"]
    assert fab.at[0] - t0 >= 0.4 - 0.02
    # t_s counts from the measured interval's start, as at_s does
    assert recs[0]["t_s"] == pytest.approx(0.1, abs=0.08)


def test_omit_s_is_checked(tmp_path):
    exp = json.load(open(os.path.join(ROOT, "testbed", "experiments", "default.json")))
    assert exp.get("omit_s", 0) > 0     # make testbed measures after the warm-up
    for bad in (-1, "10", 601):
        p = tmp_path / "e.json"
        p.write_text(json.dumps(dict(exp, omit_s=bad)))
        with pytest.raises(experiment.ExperimentError) as e:
            experiment.validate_experiment(str(p))
        assert "omit_s" in str(e.value)


def test_boot_timeout_grows_with_the_experiment(monkeypatch):
    """A boot's wall-time limit comes from the experiment's size, not a
    fixed hour: presto.json's 30 cells of 20 s did not finish in 3600 s on
    a loaded host.  At least an hour; DCNET_TIMEOUT_SCALE multiplies it."""
    monkeypatch.delenv("DCNET_TIMEOUT_SCALE", raising=False)
    small = {"schemes": [{}], "workloads": [{}], "duration_s": 10}
    assert run.boot_timeout(small) == 3600
    grid = run.load_experiment(os.path.join(ROOT, "testbed", "experiments", "presto.json"))
    cells = len(grid["schemes"]) * len(grid["workloads"])
    assert cells == 30
    assert run.boot_timeout(grid) >= 4 * 3315      # the grid alone took 3315 s
    monkeypatch.setenv("DCNET_TIMEOUT_SCALE", "2")
    assert run.boot_timeout(small) == 7200
