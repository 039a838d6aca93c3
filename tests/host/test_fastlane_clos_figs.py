"""FastLane's Figs. 5 and 6 on the testbed's Clos (issue 19): the degraded
spine link (a fault "degrade" at 0 s: the tc lines at both ends) and the
share of short flows in partagg's load (short_share), and the two
experiment files bench-fastlane-clos runs."""
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dcnet.testbed import fabric
from dcnet.testbed import workloads
from dcnet.testbed.experiment import ExperimentError, validate_experiment

HOSTS = [f"h{i}" for i in range(1, 17)]
EXP = os.path.join(ROOT, "testbed", "experiments")


def planned(mode="ecmp", **topo):
    t = fabric.Topology(**{"kind": "clos", "spines": 4, "leaves": 4, "hosts_per_leaf": 4, "link_mbit": 40,
                           "fabric_mbit": 10, **topo})
    fab = fabric.Fabric.__new__(fabric.Fabric)
    fab.topo, fab.mode, fab.subflows = t, mode, 8
    fab.hosts, fab.switches, fab.links = {}, [], []
    fab.down, fab.rates = set(), {}
    fab._plan()
    return fab


def short_bytes_share(flows):
    return sum(f["bytes"] for f in flows if f["kind"] == "short") / sum(f["bytes"] for f in flows)


@pytest.mark.parametrize("share", [0.1, 0.3, 0.5])
def test_partagg_short_share_is_the_short_flows_share_of_the_bytes(share):
    flows = workloads.generate("partagg", HOSTS, seed=1, duration_s=60, load=0.1875, link_mbit=10,
                               short_share=share)
    assert abs(short_bytes_share(flows) - share) < 0.05, short_bytes_share(flows)
    # the total load stays the same: 60 s of 16 x 1.875 Mbit/s
    total = sum(f["bytes"] for f in flows) * 8 / 60 / 1e6
    assert 0.8 * 30 < total < 1.2 * 30, total


def test_partagg_default_share_is_the_papers_ten_percent_and_unchanged():
    """short_share's default gives the flows fastlane-scatter.json ran"""
    kw = dict(seed=1, duration_s=10, load=0.125, link_mbit=10)
    assert workloads.generate("partagg", HOSTS, **kw) == workloads.generate("partagg", HOSTS, short_share=0.1, **kw)


@pytest.mark.parametrize("share", [0, 1, -0.1])
def test_partagg_short_share_out_of_range(share):
    with pytest.raises(ValueError, match="short_share"):
        workloads.generate("partagg", HOSTS, short_share=share)


def test_short_share_in_the_schema():
    exp = {"schemes": [{"name": "a"}], "workloads": [{"name": "partagg", "short_share": 0.5}]}
    validate_experiment(exp, name="ok.json")
    exp["workloads"][0]["short_share"] = 1
    with pytest.raises(ExperimentError, match=r"workloads\[0\]\.short_share: must be < 1"):
        validate_experiment(exp, name="x.json")
    exp["workloads"][0] = {"name": "websearch", "short_share": 0.5}
    with pytest.raises(ExperimentError, match="unknown key 'short_share' for workload 'websearch'"):
        validate_experiment(exp, name="x.json")
    exp["workloads"][0] = {"name": "stride", "with": [{"name": "partagg", "short_share": 0.3}]}
    validate_experiment(exp, name="ok.json")


def test_degrade_a_fastlane_spine_link_changes_both_ends_rate_and_notification_cap():
    fab = planned(fastlane=True, ecn_k_bytes=6250)
    lines = dict(fab.degrade_lines("l1", "s1", 1))
    htb = "htb rate 1mbit ceil 1mbit burst 3000 cburst 3000"
    assert lines == {
        "l1": [f"class change dev s1 parent 1: classid 1:1 {htb}",
               "qdisc change dev s1 parent 1:1 handle 10: fastlane rate 1mbit"],
        "s1": [f"class change dev l1 parent 1: classid 1:1 {htb}",
               "qdisc change dev l1 parent 1:1 handle 10: fastlane rate 1mbit"]}


def test_degrade_without_fastlane_changes_the_shaper_only():
    fab = planned(codel_target_us=5000, codel_interval_us=100000)
    for _n, lines in fab.degrade_lines("s2", "l3", 1):
        assert len(lines) == 1 and lines[0].startswith("class change dev ")
    # a host's NIC is no FastLane port: only the leaf's end takes the rate
    fab = planned(fastlane=True)
    lines = dict(fab.degrade_lines("h1", "eth0", 4))
    assert len(lines["h1"]) == 1 and lines["l1"][-1] == "qdisc change dev h1 parent 1:1 handle 10: fastlane rate 4mbit"


def test_fig5_experiment_degrades_one_spine_link_to_a_tenth_from_the_start():
    exp = validate_experiment(os.path.join(EXP, "fastlane-degraded.json"))
    (fault,) = exp["faults"]
    assert fault["action"] == "degrade" and fault["at_s"] == 0
    assert fault["node"][0] + fault["port"][0] in ("ls", "sl")
    # the paper: a core-to-agg link from 10 to 1 Gbit/s
    assert fault["mbit"] * 10 == exp["topology"]["fabric_mbit"]
    names = [s["name"] for s in exp["schemes"]]
    assert {"tcp-codel", "fl-fh", "fl-ps"} <= set(names)
    assert {s["name"]: s["mode"] for s in exp["schemes"]}["fl-ps"] == "scatter"


def test_fig6_experiment_varies_the_short_share_at_a_fixed_load():
    exp = validate_experiment(os.path.join(EXP, "fastlane-share.json"))
    wls = exp["workloads"]
    assert {w["load"] for w in wls} == {0.1875}        # 60% of the core, as the paper
    shares = [w["short_share"] for w in wls]
    assert shares == sorted(shares) and shares[0] == 0.1 and shares[-1] == 0.5
    assert {"tcp-codel", "fl-fh", "fl-ps"} <= {s["name"] for s in exp["schemes"]}
