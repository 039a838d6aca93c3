"""The emulated testbed (dcnet/testbed/fabric.py) in the booted kernel: every
topology builds and every host reaches every other (IPv4 and IPv6), ECMP
spreads distinct flows over distinct spines, a link failure reroutes a
running flow (routed fabric and controller-installed L2 tables), and a
short workload run yields a complete, schema-valid report.

Traffic here is made by sockets this process opens inside the hosts'
namespaces (setns), not by one process per host: in the debug guest each
process start costs 1-5 s.
"""
import fcntl
import json
import os
import re
import select
import socket
import struct
import threading
import time

import pytest

from dcnet import config
from dcnet.testbed.fabric import Fabric, Topology, netns, sysctl
from dcnet.wait import wait_until

PORT = 7000

# DCNET_TESTBED_QUICK=1 leaves out the two slowest tests, the link-failure
# and report tests (minutes each in the debug guest)
slow_in_debug_guest = pytest.mark.skipif(
    config.get("DCNET_TESTBED_QUICK"), reason="DCNET_TESTBED_QUICK set")


@pytest.fixture
def fabrics():
    made = []

    def make(topo, mode="ecmp", prefix="tt", **kw):
        fab = Fabric(topo, mode=mode, prefix=f"{prefix}{len(made)}", **kw)
        made.append(fab)
        return fab

    yield make
    for fab in made:
        fab.close()


def listener(fab, host, port=PORT):
    """a dual-stack listener in host's namespace (the kernel completes
    handshakes into the backlog; nobody needs to accept)"""
    with netns(fab.ns(host)):
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", port))
    s.listen(1024)
    return s


def client(fab, host, v6):
    with netns(fab.ns(host)):
        return socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_STREAM)


def connect_all(fab, pairs, timeout=30):
    """non-blocking connects for (src, dst, v6); returns the pairs that failed"""
    socks = {}
    for src, dst, v6 in pairs:
        s = client(fab, src, v6)
        s.setblocking(False)
        s.connect_ex((fab.ip(dst, v6), PORT))
        socks[s] = (src, dst, v6)
    pending, failed = dict(socks), []
    deadline = time.time() + timeout
    while pending and time.time() < deadline:
        _r, w, _x = select.select([], list(pending), [], 1.0)
        for s in w:
            err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                failed.append((*pending[s], os.strerror(err)))
            del pending[s]
    failed += [(*v, "timeout") for v in pending.values()]
    for s in socks:
        s.close()
    return failed


TOPOLOGIES = {
    "clos-4x4x4-ecmp": (dict(kind="clos", spines=4, leaves=4, hosts_per_leaf=4), "ecmp"),
    "single-16": (dict(kind="single", hosts=16), "ecmp"),
    "clos-2x2x2-l2": (dict(kind="clos", spines=2, leaves=2, hosts_per_leaf=2), "l2"),
}


@pytest.mark.parametrize("name", list(TOPOLOGIES))
def test_topology_every_pair_reaches(fabrics, name):
    kw, mode = TOPOLOGIES[name]
    t0 = time.time()
    fab = fabrics(Topology(link_mbit=10, **kw), mode=mode)
    built = time.time() - t0
    hosts = list(fab.hosts)
    assert len(hosts) == fab.topo.n_hosts
    ls = [listener(fab, h) for h in hosts]
    try:
        pairs = [(a, b, v6) for v6 in (False, True) for a in hosts for b in hosts if a != b]
        failed = connect_all(fab, pairs)
    finally:
        for s in ls:
            s.close()
    print(f"{name}: built in {built:.1f} s, {len(pairs)} connections")
    assert not failed, f"{len(failed)} of {len(pairs)} host pairs unreachable, e.g. {failed[:5]}"


def uplink_tx(fab, leaf):
    st = fab.link_stats(leaf)
    # spine ports only (the guest's kernel also has sit0 in every namespace)
    return {p: st[p]["tx_packets"] for p in st if re.fullmatch(r"s\d+", p)}


SIOCOUTQ = 0x5411


def unacked(s):
    """bytes socket s sent (or has to send) that are not acknowledged yet"""
    return struct.unpack("i", fcntl.ioctl(s.fileno(), SIOCOUTQ, b"\0" * 4))[0]


def send_many(fab, src, dst, v6, n, nbytes):
    """n connections src -> dst, each sending nbytes"""
    socks = []
    for _ in range(n):
        s = client(fab, src, v6)
        s.settimeout(30)
        s.connect((fab.ip(dst, v6), PORT))
        socks.append(s)
    for s in socks:
        s.sendall(b"x" * nbytes)
    # every byte acknowledged: it crossed the fabric, and its links counted it
    wait_until(lambda: all(unacked(s) == 0 for s in socks), 30,
               f"the {n} connections' data was acknowledged")
    for s in socks:
        s.close()


def spread(fab, v6):
    lst = listener(fab, "h2")
    try:
        before = uplink_tx(fab, "l1")
        send_many(fab, "h1", "h2", v6, 32, 20000)
        after = uplink_tx(fab, "l1")
    finally:
        lst.close()
    return {p: after[p] - before[p] for p in after}


def test_ecmp_spreads_flows_over_spines(fabrics):
    """32 flows h1 -> h2 through leaf l1's four uplinks, IPv4 and IPv6"""
    fab = fabrics(Topology(kind="clos", spines=4, leaves=2, hosts_per_leaf=1, link_mbit=20))
    for v6 in (False, True):
        d = spread(fab, v6)
        total = sum(d.values())
        print(f"{'IPv6' if v6 else 'IPv4'} 5-tuple hashing: packets per uplink of l1: {d}")
        assert total > 32 * 20000 // 1500, d
        used = [p for p, v in d.items() if v > 0.05 * total]
        assert len(used) >= 3, f"32 flows used only {used} of 4 spines: {d}"
    # the same flows hashed on addresses only (IPv4 policy 0) take one
    # path (IPv6's policy 0 hashes the flow label, which differs per socket)
    with netns(fab.ns("l1")):
        sysctl("net.ipv4.fib_multipath_hash_policy", 0)
    d = spread(fab, False)
    print(f"IPv4 address hashing: packets per uplink of l1: {d}")
    assert max(d.values()) > 0.95 * sum(d.values()), d


def test_scatter_sprays_one_flow_over_every_spine(fabrics):
    """mode scatter (FastLane's FL-PS): one IPv4 connection's packets go
    round robin over l1's four uplinks; IPv6 stays hashed (one spine)"""
    fab = fabrics(Topology(kind="clos", spines=4, leaves=2, hosts_per_leaf=1, link_mbit=20), mode="scatter")
    for v6 in (False, True):
        lst = listener(fab, "h2")
        try:
            before = uplink_tx(fab, "l1")
            send_many(fab, "h1", "h2", v6, 1, 60000)
            after = uplink_tx(fab, "l1")
        finally:
            lst.close()
        d = {p: after[p] - before[p] for p in after}
        total = sum(d.values())
        print(f"{'IPv6' if v6 else 'IPv4'} scatter, one connection: packets per uplink of l1: {d}")
        assert total > 60000 // 1500, d
        if v6:
            # one spine; the others see only the odd packet of the
            # leaf's own (IPv6 neighbour discovery and MLD)
            assert max(d.values()) >= total - 4, d
        else:
            # consecutive IP IDs: within a packet or two of a quarter each
            assert len(d) == 4 and all(abs(v - total / 4) <= 3 for v in d.values()), d


def test_ecmp_placement_is_the_5_tuples_alone(fabrics):
    """the same 5-tuple takes the same spine on every connection: the
    fabric hashes packet fields (and the fixed seed), never the sending
    socket's random hash that a veth carries along with the skb"""
    fab = fabrics(Topology(kind="clos", spines=4, leaves=2, hosts_per_leaf=1, link_mbit=20),
                  hash_seed=1)
    lst = listener(fab, "h2")
    try:
        for v6, policy in ((False, 3), (True, 3), (False, 1)):
            if policy == 1:
                # the cause, shown: policy 1 follows each socket's random
                # hash (all 6 on one spine by chance: (1/4)^5)
                with netns(fab.ns("l1")):
                    sysctl("net.ipv4.fib_multipath_hash_policy", 1)
            taken = []
            for i in range(6):
                before = uplink_tx(fab, "l1")
                s = client(fab, "h1", v6)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                # no TIME_WAIT: the next connection reuses the 5-tuple
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                s.bind(("::" if v6 else "0.0.0.0", 40000))
                s.settimeout(30)
                s.connect((fab.ip("h2", v6), PORT))
                s.sendall(b"x" * 60000)
                wait_until(lambda: unacked(s) == 0, 30, "the 60000 bytes were acknowledged")
                s.close()
                after = uplink_tx(fab, "l1")
                d = {p: after[p] - before[p] for p in after}
                taken.append(max(d, key=d.get))
                assert d[taken[-1]] > 0.9 * sum(d.values()), d
            print(f"{'IPv6' if v6 else 'IPv4'} policy {policy}: one 5-tuple, 6 connections, spines {taken}")
            if policy == 3:
                assert len(set(taken)) == 1, taken
            else:
                assert len(set(taken)) > 1, taken
    finally:
        lst.close()


class Stream:
    """one TCP flow src -> dst sending as fast as it may; the receiver
    logs (time, bytes) so that a stall and a recovery can be seen"""

    def __init__(self, fab, src, dst, v6, port):
        self.lst = listener(fab, dst, port)
        self.tx = client(fab, src, v6)
        self.tx.settimeout(10)
        self.tx.connect((fab.ip(dst, v6), port))
        self.rx, _ = self.lst.accept()
        self.rx.settimeout(0.2)
        self.log = []
        self.stop = False
        self.threads = [threading.Thread(target=self._send, daemon=True),
                        threading.Thread(target=self._recv, daemon=True)]
        for t in self.threads:
            t.start()

    def _send(self):
        buf = b"y" * 16384
        while not self.stop:
            try:
                self.tx.send(buf)
            except socket.timeout:
                continue
            except OSError:
                return

    def _recv(self):
        while not self.stop:
            try:
                n = len(self.rx.recv(65536))
            except socket.timeout:
                continue
            except OSError:
                return
            if not n:
                return
            self.log.append((time.time(), n))

    def bytes_between(self, t0, t1):
        return sum(n for t, n in self.log if t0 <= t < t1)

    def close(self):
        self.stop = True
        for t in self.threads:
            t.join(timeout=15)
        for s in (self.tx, self.rx, self.lst):
            s.close()


@slow_in_debug_guest
@pytest.mark.parametrize("mode", ["ecmp", "l2"])
def test_link_failure_reroutes(fabrics, mode):
    """cut the spine link a running flow uses: it moves to the other spine
    and recovers (ECMP: an IPv4 and an IPv6 flow at once; L2: the
    controller moves the destination's tree)"""
    fab = fabrics(Topology(kind="clos", spines=2, leaves=2, hosts_per_leaf=1, link_mbit=5), mode=mode)
    streams = [Stream(fab, "h1", "h2", False, PORT + 1)]
    if mode == "ecmp":
        streams.append(Stream(fab, "h1", "h2", True, PORT + 2))
    try:
        time.sleep(3)
        before = uplink_tx(fab, "l1")
        time.sleep(2)
        mid = uplink_tx(fab, "l1")
        d = {p: mid[p] - before[p] for p in mid}
        path = max(d, key=d.get)
        other = [p for p in d if p != path][0]
        assert d[path] > 50, f"no traffic on l1's uplinks: {d}"
        t_cut = time.time()
        fab.set_link("l1", path, False)
        t_set = time.time()       # the link is down and the routes are new
        # what the dead port counted up to the cut (in the debug guest the
        # snapshot before it is seconds old)
        at_cut = uplink_tx(fab, "l1")
        # in the debug guest the cut and the new routes take seconds of
        # process starts, and TCP backs its RTO off meanwhile: wait (up to
        # a minute) until every flow delivers again, then watch 3 s more
        recovered = None
        while time.time() < t_cut + 60:
            time.sleep(1)
            now = time.time()
            if all(st.bytes_between(max(t_set, now - 1.5), now + 1) for st in streams):
                recovered = time.time() - t_cut
                break
        t0 = time.time()
        time.sleep(3)
        after = uplink_tx(fab, "l1")
        late = [st.bytes_between(t0, t0 + 3) for st in streams]
    finally:
        for st in streams:
            st.close()
    moved = after[other] - mid[other]
    print(f"{mode}: traffic on {d}; after cutting l1-{path}: flows delivering again after {recovered} s,"
          f" {moved} packets on {other}, {late} bytes per flow in the 3 s after")
    assert recovered is not None, "a flow did not recover within 60 s of the cut"
    assert after[path] - at_cut[path] < 5, "packets still sent on a dead link"
    assert moved > 50, f"traffic did not move to {other}"
    assert all(v > 0 for v in late), f"a flow stalled again: {late}"


@slow_in_debug_guest
def test_workload_run_report_is_schema_valid(fabrics, tmp_path):
    from dcnet.testbed import report
    from dcnet.testbed import run as testbed_run
    from dcnet.testbed import workloads
    topo = Topology(kind="clos", spines=2, leaves=2, hosts_per_leaf=2, link_mbit=5)
    fab = fabrics(topo)
    # 8 s, so that the RTT probe (sockperf, from 1 s to 4 s before the
    # end) runs 4 s.  With 3 s the probe ran 1 s, of which sockperf
    # counts only what follows its 400 ms warm-up, and it logged no sample
    # twice (exit 0): in the check of 2026-11-25 and in the two-VM check
    # of 2026-11-29, where the debug guest's elephants moved only 0.6 of
    # 5 Mbit/s (the guest's CPU, not the links, was the limit).  Why no
    # round trip completed in that window was not found.
    exp = dict(topology=topo.to_dict(), duration_s=8, rtt_probe=True)
    flows = workloads.generate("stride", list(fab.hosts), stride=2, duration_s=8)
    # sized flows next to the elephants, as Presto's mice: dltraffic sched
    mice = workloads.generate("mice", list(fab.hosts), count=2, duration_s=2)
    for i, m in enumerate(mice):
        m["id"] = len(flows) + i
    flows += mice
    r = testbed_run.run_one(fab, dict(name="ecmp"), dict(name="stride"), flows, exp)
    raw = dict(meta=dict(platform="emulated", kernel=os.uname().release, hosts=list(fab.hosts),
                         link_mbit=topo.link_mbit, paper_link_mbit=topo.paper_link_mbit, scale=topo.scale,
                         started="now", experiment=exp), runs=[r])
    # plots are tested on the host (tests/host/test_testbed.py): importing
    # matplotlib alone takes minutes in the debug guest
    res = report.build(raw, str(tmp_path), plot=False)
    with open(tmp_path / "results.json") as f:
        res = json.load(f)
    report.validate(res, "results")
    run0 = res["runs"][0]
    print(json.dumps({k: run0[k] for k in ("elephant_mean_bps", "jain", "drops", "rtt_us")}, default=str)[:600])
    assert run0["flows"] == 4 + len(mice) and run0["incomplete"] == 0
    # every elephant moved data (rates are the benchmark's business, not
    # this test's), and every mouse completed with its size and an FCT
    eleph = [f for f in r["flows"] if f["kind"] == "elephant"]
    assert len(eleph) == 4
    assert all(f["tput_bps"] > 0.02 * 5e6 and f["bytes"] > 0 for f in eleph), [f["tput_bps"] for f in eleph]
    sized = [f for f in r["flows"] if f["kind"] == "mouse"]
    assert len(sized) == len(mice) and all(f["bytes"] == 50 * 1024 and f["fct_us"] > 0 for f in sized)
    assert sum(c["n"] for c in run0["fct"].values()) == len(mice)
    assert r["rtt_us"] and r["rtt_us"]["p50"] > 0
    assert len(r["ports"]) == 2 * 4 + 2 * 2      # every switch egress port
    text = (tmp_path / "report.md").read_text()
    assert f"| ecmp | stride | {4 + len(mice)} |" in text
    bad = json.loads(json.dumps(raw))
    del bad["runs"][0]["flows"][0]["tput_bps"]
    with pytest.raises(Exception):
        report.validate(bad, "raw")


def test_ecn_marking_at_k(fabrics):
    """ports with ecn_k_bytes CE-mark ECN-capable traffic once their queue
    passes K, and never mark what is not ECN-capable: two senders into
    one receiver (2:1 at the receiver's port), first with ECN, then
    without"""
    from dcnet.testbed import run as testbed_run
    # 2 Mbit/s: two senders in the debug guest manage about 3 together
    # (at 5 Mbit/s the port never queued there, 2026-11-23)
    topo = Topology(kind="single", hosts=3, link_mbit=2, ecn_k_bytes=15000)
    fab = fabrics(topo)
    flows = [dict(id=i, src=h, dst="h3", kind="elephant", duration_s=5, port=5201 + i)
             for i, h in enumerate(["h1", "h2"])]

    def port():
        return next(p for p in fab.port_counters() if p["dev"] == "h3")
    res = {}
    for ecn in (1, 0):
        before = port()
        exp = dict(duration_s=5, rtt_probe=False, sysctls={"net.ipv4.tcp_ecn": ecn})
        r = testbed_run.run_one(fab, dict(name="ecmp"), dict(name="incast2"), flows, exp)
        after = port()
        res[ecn] = {k: after[k] - before[k] for k in ("sent_packets", "marks", "drops")}
        res[ecn]["tput"] = [f["tput_bps"] for f in r["flows"]]
    print(f"port o1:h3 with ECN: {res[1]}; without: {res[0]}")
    assert all(t and t > 0 for t in res[1]["tput"] + res[0]["tput"])
    assert res[1]["sent_packets"] > 500 and res[1]["marks"] > 0, "no CE marks above K"
    assert res[0]["sent_packets"] > 500 and res[0]["marks"] == 0, "non-ECT packets were marked"
    assert res[0]["drops"] > 0, "without ECN the port must drop instead"
