"""Presto's sender on the emulated fabric (testbed/presto.py) in the
booted kernel, with the patched Open vSwitch (`make ovs`): one TCP flow's
flowcells take distinct spanning trees (packets counted at the spines,
flowcell IDs read from the source MACs at the receiver), the per-flow
baseline keeps a flow on one tree, a cut link is pruned by the controller
and the flow goes on, and ovs-ofctl refuses a bad flowcell group."""
import os
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "testbed"))

from fabric import Fabric, Topology, netns  # noqa: E402
import presto  # noqa: E402

PORT = 7100
MB = 1 << 20


def have_ovs():
    try:
        presto.ovs_programs()
        return True
    except FileNotFoundError:
        return False


pytestmark = pytest.mark.skipif(not have_ovs() and not os.environ.get("DCNET_REQUIRE_OVS"),
                                reason="the patched Open vSwitch is not built (make ovs)")


@pytest.fixture
def plane():
    made = []

    def make(mode="presto", spines=2, **kw):
        topo = Topology(kind="clos", spines=spines, leaves=2, hosts_per_leaf=1, link_mbit=100,
                        buffer_bytes=262144, **kw)
        fab = Fabric(topo, mode=mode, prefix=f"tp{len(made)}")
        made.append(fab)
        return fab

    yield make
    for fab in made:
        fab.close()


def spine_packets(fab):
    """packets each spine sent towards leaf l2 (h2's leaf)"""
    return {s: fab.link_stats(s)["l2"]["tx_packets"] for s in fab.switches if s.startswith("s")}


def transfer(fab, nbytes, v6=False, src="h1", dst="h2", macs=None):
    """send nbytes from src to dst over one connection; macs: collect the
    source MACs of the frames dst's eth0 receives"""
    with netns(fab.ns(dst)):
        ls = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003)) if macs is not None else None
    ls.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    ls.bind(("::", PORT))
    ls.listen(1)
    if raw is not None:
        raw.bind(("eth0", 0))
        raw.settimeout(0.2)
    got = [0]
    stop = threading.Event()

    def sink():
        c, _ = ls.accept()
        while True:
            d = c.recv(1 << 16)
            if not d:
                break
            got[0] += len(d)
        c.close()

    def sniff():
        while not stop.is_set():
            try:
                f = raw.recv(64)
            except socket.timeout:
                continue
            if len(f) >= 14 and struct.unpack("!H", f[12:14])[0] in (0x0800, 0x86dd):
                macs.append(f[6:12])

    t = threading.Thread(target=sink)
    t.start()
    if raw is not None:
        ts = threading.Thread(target=sniff)
        ts.start()
    with netns(fab.ns(src)):
        c = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_STREAM)
    c.settimeout(60)
    c.connect((fab.ip(dst, v6), PORT))
    buf = b"\0" * MB
    left = nbytes
    while left > 0:
        left -= c.send(buf[:min(left, MB)])
    c.shutdown(socket.SHUT_WR)
    t.join(120)
    c.close()
    ls.close()
    if raw is not None:
        stop.set()
        ts.join()
        raw.close()
    return got[0]


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_one_flows_flowcells_take_distinct_trees(plane, v6):
    fab = plane("presto")
    before = spine_packets(fab)
    macs = []
    assert transfer(fab, 4 * MB, v6=v6, macs=macs) == 4 * MB
    after = spine_packets(fab)
    sent = {s: after[s] - before[s] for s in after}
    total = sum(sent.values())
    # 4 MB in 64 KB flowcells, round robin over 2 trees: each spine
    # carries about half (a flowcell is at most one TSO skb over 64 KB)
    assert total >= 4 * MB // 1500, sent
    for s, n in sent.items():
        assert 0.35 * total <= n <= 0.65 * total, sent
    # the flowcell ID rides in the source MAC's last two bytes
    ids = {m[4:6] for m in macs}
    assert len(ids) >= 4 * MB // 65536 // 2, (len(ids), len(macs))


def test_per_flow_hash_keeps_a_flow_on_one_tree(plane):
    fab = plane("l2ecmp")
    before = spine_packets(fab)
    assert transfer(fab, 2 * MB) == 2 * MB
    after = spine_packets(fab)
    sent = sorted(after[s] - before[s] for s in after)
    assert sent[-1] >= 2 * MB // 1500 and sent[0] <= 0.02 * sent[-1], sent


def test_a_cut_tree_is_pruned_and_the_flow_goes_on(plane):
    fab = plane("presto")
    fab.set_link("l1", "s1", False)
    ev = fab.presto.events[-1]
    assert ev["groups_changed"] == 2, ev       # h1 -> h2 and h2 -> h1
    assert fab.presto.groups[(1, 2)] == [(2, 1)]
    before = spine_packets(fab)
    assert transfer(fab, 2 * MB) == 2 * MB
    after = spine_packets(fab)
    assert after["s1"] - before["s1"] == 0
    fab.set_link("l1", "s1", True)
    assert fab.presto.groups[(1, 2)] == [(1, 1), (2, 1)]


def test_ofctl_refuses_a_bad_flowcell_size(plane):
    fab = plane("presto")
    bad = presto.group_spec(2, [(1, 1)]).replace("flowcell_size=65536", "flowcell_size=1023")
    p = subprocess.run([fab.vswitch.prog["ovs-ofctl"], "-O", "OpenFlow15", "mod-group", fab.vswitch.mgmt("b1"),
                        bad], capture_output=True, text=True, env=fab.vswitch.env)
    assert p.returncode != 0 and "invalid flowcell size 1023" in p.stderr, p
    # the group in place is untouched
    out = fab.vswitch.ofctl("dump-groups", "b1")
    assert "group_id=2," in out and "selection_method=flowcell" in out, out
