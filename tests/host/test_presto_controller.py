"""dcnet/testbed/presto.py without a VM: shadow MACs, group lines, the
controller's tables, pruning and weights after a link fails or degrades."""
import os
import re
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dcnet.testbed import fabric
from dcnet.testbed import presto


def test_shadow_macs_are_distinct_and_tree_0_is_the_real_mac():
    macs = {presto.shadow_mac(h, t) for h in range(1, 17) for t in range(0, 5)}
    assert len(macs) == 16 * 5
    fab = plan(fabric.Topology())
    for h in fab.hosts.values():
        assert presto.shadow_mac(h.index, 0) == h.mac
    with pytest.raises(ValueError):
        presto.shadow_mac(0, 1)
    with pytest.raises(ValueError):
        presto.shadow_mac(1, 256)


def test_group_line_selects_the_flowcell_algorithm_and_size():
    g = presto.group_spec(5, [(1, 2), (2, 1)])
    assert g.startswith("group_id=5,type=select,selection_method=flowcell,flowcell_size=65536,")
    assert "bucket=bucket_id:1,weight:2,actions=set_field:02:dc:01:00:00:05->eth_dst,output:2" in g
    assert "bucket=bucket_id:2,weight:1,actions=set_field:02:dc:02:00:00:05->eth_dst,output:2" in g
    assert "flowcell_size=16384," in presto.group_spec(5, [(1, 1)], flowcell_bytes=16384)
    h = presto.group_spec(5, [(1, 1)], method="hash")
    assert "selection_method=dp_hash," in h and "selection_method_param" not in h
    with pytest.raises(ValueError):
        presto.group_spec(5, [])
    with pytest.raises(ValueError):
        presto.group_spec(5, [(1, 1)], method="flowlet")


def plan(topo, mode="ecmp"):
    fab = fabric.Fabric.__new__(fabric.Fabric)
    fab.topo, fab.mode, fab.subflows = topo, mode, 8
    fab.hosts, fab.switches, fab.links = {}, [], []
    fab.down, fab.rates = set(), {}
    fab._plan()
    return fab


def test_presto_wiring_puts_a_vswitch_between_host_and_leaf():
    fab = plan(fabric.Topology(), mode="presto")
    h1 = fab.hosts["h1"]
    assert ("h1", "eth0", "vs", "v1") in fab.links
    assert ("vs", "u1", h1.leaf, "h1") in fab.links
    assert not any(a == "h1" and b == h1.leaf for a, _, b, _ in fab.links)
    assert fab.l2 and fab.vswitched
    assert not plan(fabric.Topology()).vswitched


class FakeVS:
    def __init__(self):
        self.calls = []

    def ofctl(self, cmd, bridge, *args, input=None):
        self.calls.append((cmd, bridge, args, input))

    def ofctl_many(self, cmd, inputs):
        for bridge, text in inputs:
            self.calls.append((cmd, bridge, ("-",), text))


class FakeL2(fabric.Controller):
    def install_many(self, entries):
        self.entries = list(entries)

    def _apply(self, per_sw):
        self.applied = getattr(self, "applied", []) + [per_sw]


def controller(mode="presto"):
    fab = plan(fabric.Topology(), mode=mode)
    fab.controller = FakeL2(fab)
    vs = FakeVS()
    pc = presto.PrestoController(fab, vs, method="flowcell" if mode == "presto" else "hash")
    pc.install()
    return fab, vs, pc


def test_install_gives_every_host_a_group_per_destination_over_every_tree():
    fab, vs, pc = controller()
    # fabric entries: one per host per tree
    assert len(fab.controller.entries) == 16 * 4
    assert ("02:dc:03:00:00:07", "h7", 3) in fab.controller.entries
    groups = {b: inp for cmd, b, _, inp in vs.calls if cmd == "add-groups"}
    flows = {b: inp for cmd, b, _, inp in vs.calls if cmd == "add-flows"}
    assert set(groups) == set(flows) == {f"b{i}" for i in range(1, 17)}
    lines = groups["b1"].strip().split("\n")
    assert len(lines) == 15
    for line in lines:
        assert len(re.findall(r"bucket=bucket_id:(\d)", line)) == 4
        assert line.count("weight:1,") == 4
    f1 = flows["b1"]
    assert "in_port=1,dl_dst=02:dc:00:00:00:09,actions=group:9" in f1
    assert "in_port=2,dl_dst=02:dc:02:00:00:01,actions=set_field:02:dc:00:00:00:01->eth_dst,output:1" in f1
    assert "dl_dst=02:dc:00:00:00:01,actions=group" not in f1


def test_ecmp_baseline_uses_the_stock_hash():
    _, vs, _ = controller("l2ecmp")
    g = [inp for cmd, b, _, inp in vs.calls if cmd == "add-groups"][0]
    assert "selection_method=dp_hash," in g and "selection_method_param" not in g


def test_a_cut_link_prunes_its_tree_for_the_pairs_that_cross_it():
    fab, vs, pc = controller()
    vs.calls.clear()
    fab.down.add(frozenset({("l1", "s2"), ("s2", "l1")}))
    ev = pc.link_changed(cause="l1:s2 down")
    # h1..h4 sit under l1: their groups towards the 12 hosts elsewhere
    # lose tree 2; the other 12 hosts' groups towards h1..h4 too
    assert ev["groups_changed"] == 4 * 12 + 12 * 4
    assert pc.groups[(1, 9)] == [(1, 1), (3, 1), (4, 1)]
    assert pc.groups[(9, 2)] == [(1, 1), (3, 1), (4, 1)]
    assert pc.groups[(1, 2)] == [(t, 1) for t in (1, 2, 3, 4)]      # same leaf
    assert pc.groups[(5, 9)] == [(t, 1) for t in (1, 2, 3, 4)]      # neither leaf is l1
    mods = "".join(inp for cmd, b, _, inp in vs.calls)
    assert all(line.startswith("modify group_id=") for line in mods.strip().split("\n"))
    assert ev["fabric_s"] >= 0 and ev["groups_s"] >= 0


def test_ofctl_many_runs_the_bridges_side_by_side(tmp_path):
    """a controller's reaction rewrites every bridge's groups at once (one
    ovs-ofctl per bridge, started together), each gets its own input, and
    a bridge that fails fails the reaction with its name"""
    prog = tmp_path / "ovs-ofctl"
    prog.write_text("#!/bin/sh\n# -O OpenFlow15 CMD MGMT -\n"
                    "m=${4#unix:}; b=$(basename \"$m\" .mgmt); cat > \"$(dirname \"$m\")/$b.in\"\n"
                    "sleep 1\n[ \"$b\" != bad ] || { echo 'no such bridge' >&2; exit 1; }\n")
    prog.chmod(0o755)
    vs = presto.VSwitch.__new__(presto.VSwitch)
    vs.prog, vs.dir, vs.env = {"ovs-ofctl": str(prog)}, str(tmp_path), dict(os.environ)
    t0 = time.monotonic()
    vs.ofctl_many("add-groups", [(f"b{i}", f"modify group_id={i}\n") for i in range(1, 9)])
    assert time.monotonic() - t0 < 4          # eight 1 s processes, not 8 s
    assert (tmp_path / "b3.in").read_text() == "modify group_id=3\n"
    with pytest.raises(RuntimeError, match=r"add-groups unix:.*/bad.mgmt failed \(1\): no such bridge"):
        vs.ofctl_many("add-groups", [("b1", "x\n"), ("bad", "y\n")])


def test_a_degraded_link_gives_the_weighted_sequence():
    fab, vs, pc = controller()
    fab.rates[frozenset({"l1", "s2"})] = 5.0
    pc.link_changed(cause="l1:s2 5 Mbit/s")
    # Sec. 3.3: .25/.5/.25 style weights follow the bottleneck capacity
    assert pc.groups[(1, 9)] == [(1, 2), (2, 1), (3, 2), (4, 2)]
    assert "bucket=bucket_id:2,weight:1," in "".join(inp for _, _, _, inp in vs.calls)


def test_fast_failover_detours_only_what_crosses_the_cut_then_restores():
    """Fig. 17's failover stage: before the groups change, a leaf whose
    uplink to spine 2 is cut sends tree 2's shadow MACs up spine 3, the
    other leaves send l1's tree-2 shadow MACs up spine 3, and spine 3
    forwards them; nothing else moves, and the link's return restores
    them to their own tree"""
    fab = plan(fabric.Topology(), mode="presto")

    class L2(fabric.Controller):
        def install_many(self, entries):
            self.reinstalled = getattr(self, "reinstalled", []) + list(entries)
            for mac, host, tree in entries:
                self.installed[mac] = (host, tree)

        def _apply(self, per_sw):
            self.applied = per_sw

    fab.controller = L2(fab)
    pc = presto.PrestoController(fab, FakeVS())
    pc.install()
    fab.down.add(frozenset({("l1", "s2"), ("s2", "l1")}))
    ev = pc.link_changed(cause="l1:s2 down")
    per_sw = fab.controller.applied
    # 12 tree-2 MACs of hosts elsewhere at l1, l1's 4 hosts' at 3 leaves
    assert ev["failover_entries"] == 12 + 4 * 3
    assert f"fdb replace {presto.shadow_mac(9, 2)} dev s3 master static" in per_sw["l1"]
    assert f"fdb replace {presto.shadow_mac(9, 2)} dev l3 master static" in per_sw["s3"]
    assert f"fdb replace {presto.shadow_mac(1, 2)} dev s3 master static" in per_sw["l2"]
    assert f"fdb replace {presto.shadow_mac(1, 2)} dev l1 master static" in per_sw["s3"]
    assert not any(presto.shadow_mac(9, t) in line for t in (1, 3, 4) for lines in per_sw.values()
                   for line in lines)
    assert "s2" not in per_sw and "l3" not in [k for k, v in per_sw.items() if presto.shadow_mac(9, 2) in str(v)]
    assert fab.controller.installed[presto.shadow_mac(9, 2)] == ("h9", 2)
    assert ev["failover_s"] >= 0 and ev["groups_changed"] == 4 * 12 + 12 * 4
    # the next event (a degrade elsewhere) writes no detour again
    fab.rates[frozenset({"l3", "s1"})] = 2.5
    assert pc.link_changed(cause="l3:s1 2.5 Mbit/s")["failover_entries"] == 0
    del fab.rates[frozenset({"l3", "s1"})]
    fab.down.clear()
    fab.controller.reinstalled = []
    ev = pc.link_changed(cause="l1:s2 up")
    assert ev["restored"] == 16 and ev["failover_entries"] == 0
    assert sorted(fab.controller.reinstalled) == sorted((presto.shadow_mac(i, 2), f"h{i}", 2) for i in range(1, 17))
    assert not fab.controller.detoured


def test_shadow_macs_stay_on_their_tree_when_it_is_cut():
    fab = plan(fabric.Topology(), mode="presto")
    moved = []

    class L2(fabric.Controller):
        def install_many(self, entries):
            entries = list(entries)
            moved.extend(entries)
            for mac, host, tree in entries:
                self.installed[mac] = (host, tree)

        def _apply(self, per_sw):
            pass

    fab.controller = L2(fab)
    fab.controller.install_baseline()
    pc = presto.PrestoController(fab, FakeVS())
    pc.install()
    moved.clear()
    fab.down.add(frozenset({("l1", "s2"), ("s2", "l1")}))
    pc.link_changed()
    # only real MACs on tree 2 move (h2, h6, h10, h14: index - 1 mod 4 == 1)
    assert sorted(m for m, _, _ in moved) == sorted(presto.shadow_mac(i, 0) for i in (2, 6, 10, 14))


def test_flowlet_gap_needs_presto_and_goes_to_the_datapath(monkeypatch):
    """"flowlet_gap_us" (Fig. 13's flowlet baseline): only on Presto's
    datapath, refused elsewhere before anything is built; the vSwitch sets
    it with `ovs-dpctl set-flowcell ovs-system gap=US` and a failure is an
    error, not a silent flowcell run"""
    for mode in ("ecmp", "l2ecmp", "l2"):
        with pytest.raises(ValueError, match="flowlet_gap_us needs mode presto"):
            fabric.Fabric(fabric.Topology(), mode=mode, flowlet_gap_us=500)
    calls = []
    vs = presto.VSwitch.__new__(presto.VSwitch)
    vs.prog = {"ovs-dpctl": "/x/ovs-dpctl"}
    vs.timing = {}
    monkeypatch.setattr(vs, "_run", lambda argv, ns=False: calls.append((argv, ns)), raising=False)
    vs.set_flowlet_gap(100)
    assert calls == [(["/x/ovs-dpctl", "set-flowcell", "ovs-system", "gap=100"], True)]
    assert "flowlet_gap_s" in vs.timing

    def fail(argv, ns=False):
        raise RuntimeError("ovs-dpctl: unknown argument gap=100")
    monkeypatch.setattr(vs, "_run", fail, raising=False)
    with pytest.raises(RuntimeError):
        vs.set_flowlet_gap(100)


def test_flowcell_counters_read_the_gap(monkeypatch):
    """counters.flowcell parses the gap and the flowlets it started from
    `ovs-dpctl show` (ovs-patches 0009), and still the stock lines"""
    from dcnet.testbed import counters
    text = ("system@ovs-system:\n  lookups: hit:10 missed:2 lost:0\n"
            "  flowcell: flows:3 limit:8192 idle:10000ms seed:1 gap:100000us\n"
            "    packets:40 bytes:524800 cells:9 evictions:0 expired:1 alloc_fails:0 fallbacks:1"
            " gap_cells:6\n")

    class P:
        stdout = text
    monkeypatch.setattr(counters.subprocess, "run", lambda *a, **kw: P)
    fab = type("F", (), {"ns": lambda self, n: n,
                         "vswitch": type("V", (), {"prog": {"ovs-dpctl": "x"}, "env": {}})()})()
    monkeypatch.setattr(fabric, "ns_exec", lambda ns: [], raising=False)
    d = counters.flowcell(fab)
    assert d["gap"] == 100000 and d["gap_cells"] == 6
    assert d["cells"] == 9 and d["flows"] == 3 and d["seed"] == 1 and d["expired"] == 1
    P.stdout = text.replace(" gap:100000us", "").replace(" gap_cells:6", "")
    d = counters.flowcell(fab)
    assert "gap" not in d and "gap_cells" not in d and d["cells"] == 9
