"""The testbed's per-packet scatter (mode "scatter", FastLane's FL-PS) and
CoDel ports (topology codel_target_us): the ip and tc lines the fabric
would run, planned without building anything."""
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dcnet.testbed import fabric
from dcnet.testbed.modes import scatter
from dcnet.testbed.experiment import ExperimentError, validate_experiment


def planned(mode="scatter", **topo):
    t = fabric.Topology(**topo)
    fab = fabric.Fabric.__new__(fabric.Fabric)
    fab.topo, fab.mode, fab.subflows = t, mode, 8
    fab.hosts, fab.switches, fab.links = {}, [], []
    fab.down, fab.rates = set(), {}
    fab._plan()
    return fab


def test_scatter_rules_and_tables_at_a_leaf():
    fab = planned()
    assert scatter.rules(fab, "l1") == [f"rule add fwmark {k} table {100 + k} pref {100 + k}" for k in (1, 2, 3, 4)]
    routes = scatter.routes(fab, "l1")
    # spine k's table: the three other leaves, all through spine k; no
    # route to l1's own hosts (a miss falls through to the main table)
    for k in (1, 2, 3, 4):
        mine = sorted(r for r in routes if r.endswith(f"table {100 + k}"))
        assert mine == sorted(f"route replace 10.{o}.0.0/16 via 10.101.{k}.2 dev s{k} table {100 + k}"
                              for o in (2, 3, 4))
    assert not any("10.1.0.0/16" in r for r in routes)


def test_scatter_filters_round_robin_by_ip_id():
    fab = planned()
    lines = scatter.filters(fab, "l2")
    ports = [f"h{i}" for i in (5, 6, 7, 8)]           # l2's hosts
    assert [ln for ln in lines if "ingress" in ln] == [f"qdisc add dev {p} handle ffff: ingress" for p in ports]
    for p in ports:
        mine = [ln for ln in lines if ln.startswith(f"filter add dev {p} ")]
        # the IPv4 ID (offset 4 of the IP header), low 2 bits: 0..3 -> spines 1..4
        assert mine == [f"filter add dev {p} parent ffff: protocol ip prio 1 u32 match u16 0x{v:04x} 0x0003 at 4"
                        f" action skbedit mark {v + 1}" for v in range(4)]


def test_scatter_with_three_spines_covers_every_id():
    fab = planned(spines=3, leaves=2, hosts_per_leaf=1)
    marks = [int(ln.split()[-1]) for ln in scatter.filters(fab, "l1") if "skbedit" in ln]
    assert marks == [1, 2, 3, 1] and "0x0003 at 4" in scatter.filters(fab, "l1")[1]


def test_scatter_routes_avoid_a_cut_link():
    fab = planned()
    fab.down.add(frozenset({("l1", "s2"), ("s2", "l1")}))
    routes = scatter.routes(fab, "l1")
    assert not any("dev s2" in r for r in routes)
    # spine 2's table still reaches every other leaf, through another spine
    assert sorted(r.split()[2] for r in routes if r.endswith("table 102")) == ["10.2.0.0/16", "10.3.0.0/16",
                                                                              "10.4.0.0/16"]


def test_scatter_is_a_mode_of_the_fabric_and_the_schema():
    with pytest.raises(ValueError, match="ecmp, scatter"):
        fabric.Fabric(fabric.Topology(), mode="spray")
    exp = validate_experiment(os.path.join(ROOT, "testbed", "experiments", "fastlane-scatter.json"))
    assert {s["name"]: s.get("mode") for s in exp["schemes"]}["fl-ps"] == "scatter"


def test_codel_port_qdisc():
    fab = planned(mode="ecmp", codel_target_us=5000, codel_interval_us=100000)
    lines = fab._port_qdisc("s1")
    assert lines[-1] == ("qdisc add dev s1 parent 1:1 handle 10: fq_codel limit 87 flows 1 target 5000us"
                         " interval 100000us quantum 1514 drop_batch 1 ecn")
    # host NICs keep their FIFO
    assert "pfifo" in fab._port_qdisc("eth0", host_nic=True)[-1]


@pytest.mark.parametrize("other", [dict(ecn_k_bytes=6250), dict(fastlane=True), dict(delay_us=100)])
def test_codel_does_not_combine(other):
    with pytest.raises(ValueError, match="codel_target_us cannot be combined"):
        fabric.Topology(codel_target_us=5000, **other)


def test_codel_keys_are_checked_by_the_schema():
    exp = {"schemes": [{"name": "a", "topology": {"codel_target_us": -1}}],
           "workloads": [{"name": "stride"}]}
    with pytest.raises(ExperimentError, match="codel_target_us"):
        validate_experiment(exp, name="exp.json")
    exp["schemes"][0]["topology"] = {"codel_target_us": 5000, "fastlane": True}
    with pytest.raises(ExperimentError, match="cannot be combined"):
        validate_experiment(exp, name="exp.json")
