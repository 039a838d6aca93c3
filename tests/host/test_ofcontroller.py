"""The OpenFlow controller (dcnet/controller) without a VM: the plan the
fabric emits, the trees and shadow MACs computed from it (one
implementation for the ovs-ofctl generator and the controller), the
OpenFlow 1.5 messages built for a small topology, and the controller
app's reactions (connect -> resync bundle, port-status, link report)
driven with a fake datapath."""
import json
import os
import struct
import subprocess

import pytest

from dcnet.controller import ofmsg
from dcnet.controller.plan import Plan, ofctl_flow, ofctl_group, shadow_mac, tree_weights
from dcnet.testbed import fabric, presto

from os_ken.ofproto import ofproto_v1_5 as ofp, ofproto_v1_5_parser as parser


def planned(topo=None, mode="presto"):
    fab = fabric.Fabric.__new__(fabric.Fabric)
    fab.topo, fab.mode, fab.subflows = topo or fabric.Topology(), mode, 8
    fab.hosts, fab.switches, fab.links = {}, [], []
    fab.down, fab.rates = set(), {}
    fab.flowcell_bytes = presto.FLOWCELL_BYTES
    fab._plan()
    return fab


def small():
    """2 leaves, 2 spines, one host per leaf"""
    return Plan(planned(fabric.Topology(spines=2, leaves=2, hosts_per_leaf=1, link_mbit=100)).presto_plan())


class FakeDP:
    ofproto, ofproto_parser = ofp, parser

    def __init__(self, dpid, ports=None):
        self.id, self.ports, self.sent, self.xid = dpid, ports or {}, [], 0

    def set_xid(self, msg):
        self.xid += 1
        msg.set_xid(self.xid)
        return self.xid

    def send_msg(self, msg):
        if msg.xid is None:
            self.set_xid(msg)
        msg.serialize()
        self.sent.append(msg)


def test_the_fabric_emits_a_plan_of_hosts_switches_and_links():
    fab = planned(mode="presto")
    d = fab.presto_plan()
    json.dumps(d)
    assert len(d["hosts"]) == 16 and d["spines"] == ["s1", "s2", "s3", "s4"]
    h1 = d["hosts"][0]
    assert (h1["name"], h1["dpid"], h1["leaf"], h1["port_host"], h1["port_up"]) == ("h1", 1, "l1", 1, 2)
    links = {(x["a"], x["b"]): x["mbit"] for x in d["links"]}
    assert len(links) == 16 + 16 and links[("l2", "s3")] == 10.0 and links[("h5", "l2")] == 10.0
    fab.down.add(frozenset({("l2", "s3"), ("s3", "l2")}))
    fab.down.add(frozenset({("vs", "u5"), ("l2", "h5")}))
    links = {(x["a"], x["b"]): x["mbit"] for x in fab.presto_plan()["links"]}
    assert links[("l2", "s3")] == 0 and links[("h5", "l2")] == 0 and links[("h6", "l2")] == 10.0


def test_plan_groups_equal_the_generators_and_shadow_macs_are_locally_administered():
    fab = planned(mode="presto")
    p = Plan(fab.presto_plan())
    for h in range(1, 17):
        for t in range(5):
            first = int(shadow_mac(h, t).split(":")[0], 16)
            assert first & 0x02 and not first & 0x01        # locally administered, unicast
    g = p.groups(p.by_index[1])
    assert sorted(g) == list(range(2, 17)) and g[9] == [(t, 1) for t in (1, 2, 3, 4)]
    assert presto.group_spec(9, g[9]) == ofctl_group(9, g[9])
    lines = [ofctl_flow(f) for f in p.flows(p.by_index[1])]
    assert "priority=10,in_port=1,dl_dst=02:dc:00:00:00:09,actions=group:9" in lines
    assert ("priority=10,in_port=2,dl_dst=02:dc:02:00:00:01,actions=set_field:02:dc:00:00:00:01->eth_dst,"
            "output:1") in lines
    assert len(lines) == 15 + 1 + 4 + 1


def test_tree_weights_prune_cut_links_and_weigh_degraded_ones():
    rates = {frozenset(("l1", "s1")): 0.0, frozenset(("l1", "s2")): 5.0}
    rate = lambda a, b: rates.get(frozenset((a, b)), 10.0)  # noqa: E731
    assert tree_weights(rate, "l1", "l2", [1, 2, 3], ["s1", "s2", "s3"]) == [(2, 1), (3, 2)]
    assert tree_weights(rate, "l1", "l1", [1, 2], ["s1", "s2"]) == [(1, 1), (2, 1)]
    p = small()
    p.set_link("h2", "l2", 0)
    assert p.groups(p.by_index[1]) == {2: []} and p.groups(p.by_index[2]) == {1: []}
    with pytest.raises(KeyError):
        p.set_link("l1", "l2", 0)


def test_a_bad_plan_is_refused():
    d = small().to_dict()
    with pytest.raises(ValueError, match="version"):
        Plan(dict(d, version=2))
    with pytest.raises(ValueError, match="not a switch"):
        Plan(dict(d, hosts=[dict(d["hosts"][0], leaf="l9")]))
    with pytest.raises(ValueError, match="dpid"):
        Plan(dict(d, hosts=[dict(h, dpid=7) for h in d["hosts"]]))
    with pytest.raises(ValueError, match="method"):
        Plan(dict(d, method="flowlet"))


def test_group_mod_carries_ovs_selection_method_and_weights():
    p = small()
    p.set_link("l1", "s2", 50)
    dp = FakeDP(1)
    m = ofmsg.group_mod(dp, p, 2, p.groups(p.by_index[1])[2], 2)
    dp.send_msg(m)
    buf = bytes(m.buf)
    # the NTR property: type 0xffff, length 40, experimenter, exp_type, pad, method, param
    i = buf.index(struct.pack("!HHII", 0xffff, 40, ofmsg.NTR_VENDOR_ID, ofmsg.NTRT_SELECTION_METHOD))
    assert buf[i + 16:i + 32].rstrip(b"\0") == b"flowcell"
    assert struct.unpack("!Q", buf[i + 32:i + 40])[0] == 65536
    # (os-ken's own OpenFlow 1.5 group_mod parser cannot read buckets
    # back: the message object, and OVS's decoder below, are the check)
    back = m
    assert back.type == ofp.OFPGT_SELECT and back.group_id == 2
    assert [(b.bucket_id, b.properties[0].weight) for b in back.buckets] == [(1, 2), (2, 1)]
    assert [b.actions[0].value for b in back.buckets] == [shadow_mac(2, 1), shadow_mac(2, 2)]
    h = Plan(dict(p.to_dict(), method="hash"))
    m = ofmsg.group_mod(dp, h, 2, [(1, 1)], 2)
    dp.send_msg(m)
    assert b"dp_hash\0" in bytes(m.buf)


def test_resync_is_one_atomic_bundle_that_deletes_by_cookie_then_installs():
    p = small()
    dp = FakeDP(1)
    msgs = ofmsg.resync(dp, p, p.by_index[1], 7)
    for m in msgs:
        dp.send_msg(m)
    assert msgs[0].type == ofp.OFPBCT_OPEN_REQUEST and msgs[-1].type == ofp.OFPBCT_COMMIT_REQUEST
    assert all(m.flags == ofp.OFPBF_ATOMIC | ofp.OFPBF_ORDERED and m.bundle_id == 7 for m in msgs)
    inner = [m.message for m in msgs[1:-1]]
    assert inner[0].command == ofp.OFPFC_DELETE and inner[0].cookie == ofmsg.COOKIE
    assert inner[0].cookie_mask == ofmsg.COOKIE_MASK
    assert inner[1].command == ofp.OFPGC_DELETE and inner[1].group_id == ofp.OFPG_ALL
    assert [type(m).__name__ for m in inner[2:]] == ["OFPGroupMod"] + ["OFPFlowMod"] * 5
    assert all(m.cookie == ofmsg.COOKIE for m in inner[3:])


@pytest.mark.skipif(not presto.have_ovs(), reason="the patched Open vSwitch is not built (make ovs)")
def test_ovs_ofctl_reads_the_messages_as_the_generators_lines():
    """OVS's own decoder (ovs-ofctl ofp-print) prints the controller's
    messages as the generator's ovs-ofctl lines"""
    ofctl = presto.ovs_programs()["ovs-ofctl"]
    p = small()
    dp = FakeDP(1)
    host = p.by_index[1]
    msgs = ofmsg.host_tables(dp, p, host)
    for m in msgs:
        dp.send_msg(m)
    printed = [subprocess.run([ofctl, "ofp-print", bytes(m.buf).hex()], capture_output=True, text=True,
                              check=True).stdout for m in msgs]
    # OVS leaves out weight 1 when it prints a bucket
    want = ofctl_group(2, p.groups(host)[2]).replace(",weight:1,", ",")
    assert want in printed[0].replace("\n ADD ", "")
    for f, out in zip(p.flows(host), printed[1:]):
        line = ofctl_flow(f)
        match, actions = line.split(",actions=")
        assert f"ADD {match} cookie:{ofmsg.COOKIE:#x}" in out and f"actions={actions}" in out, out


@pytest.fixture
def app(tmp_path):
    from dcnet.controller import app as appmod
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(small().to_dict()))
    appmod.SETTINGS.update(plan=str(plan), state=str(tmp_path / "state.json"), control=None)
    a = appmod.PrestoController()
    yield a


class Ev:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def port(no, down=False):
    return parser.OFPPort(port_no=no, hw_addr="00:00:00:00:00:01", name=b"u", config=0,
                          state=ofp.OFPPS_LINK_DOWN if down else 0, properties=[])


def connect(app, dpid, ports=None):
    from os_ken.controller.handler import MAIN_DISPATCHER
    dp = FakeDP(dpid, ports)
    app._state_change(Ev(datapath=dp, state=MAIN_DISPATCHER))
    return dp


def test_app_resyncs_on_connect_and_is_synced_on_commit(app, tmp_path):
    dp = connect(app, 1)
    assert [type(m).__name__ for m in dp.sent][:1] == ["OFPBundleCtrlMsg"]
    assert len(dp.sent) == 1 + 2 + 1 + 5 + 1
    st = json.loads((tmp_path / "state.json").read_text())
    assert st["switches"]["1"]["connected"] and not st["switches"]["1"]["synced"]
    commit = dp.sent[-1]
    app._bundle_reply(Ev(msg=Ev(datapath=dp, type=ofp.OFPBCT_COMMIT_REPLY, xid=commit.xid)))
    st = json.loads(json.dumps(app.snapshot()))
    assert st["switches"]["1"]["synced"] and st["switches"]["1"]["resyncs"] == 1
    assert st["switches"]["1"]["groups"] == {"2": [[1, 1], [2, 1]]}
    # a datapath not in the plan is recorded, not programmed
    other = connect(app, 99)
    assert other.sent == [] and app.snapshot()["errors"][-1]["dpid"] == 99


def test_app_reacts_to_port_status_and_link_reports(app):
    dp1, dp2 = connect(app, 1), connect(app, 2)
    dp1.sent.clear()
    dp2.sent.clear()
    app._port_status(Ev(msg=Ev(datapath=dp2, desc=port(2, down=True))))
    mods = [m for m in dp1.sent if type(m).__name__ == "OFPGroupMod"]
    assert len(mods) == 1 and mods[0].command == ofp.OFPGC_MODIFY and mods[0].buckets == []
    assert type(dp1.sent[-1]).__name__ == "OFPBarrierRequest"
    assert [m for m in dp2.sent if type(m).__name__ == "OFPGroupMod"][0].buckets == []
    # a port-status of the host's own port (1) is no uplink: nothing
    dp1.sent.clear()
    app._port_status(Ev(msg=Ev(datapath=dp2, desc=port(1, down=True))))
    assert dp1.sent == []
    app._port_status(Ev(msg=Ev(datapath=dp2, desc=port(2))))
    assert [len(m.buckets) for m in dp1.sent if type(m).__name__ == "OFPGroupMod"] == [2]
    # a fabric link report: both hosts' groups lose tree 1; barriers
    # unanswered here, so not acked
    dp1.sent.clear()
    ev = app.control({"op": "link", "a": "l1", "b": "s1", "mbit": 0, "timeout": 0.2})
    assert ev["event"]["groups_changed"] == 2 and ev["event"]["acked"] is False
    assert [[b.bucket_id for b in m.buckets] for m in dp1.sent if type(m).__name__ == "OFPGroupMod"] == [[2]]
    with pytest.raises(KeyError):
        app.control({"op": "link", "a": "l1", "b": "l2", "mbit": 0})
    with pytest.raises(ValueError):
        app.control({"op": "reboot"})
    assert {(x["a"], x["b"]): x["mbit"] for x in app.control({"op": "state"})["state"]["links"]}[("l1", "s1")] == 0


def test_app_reads_a_down_uplink_at_connect(app):
    dp1 = connect(app, 1)
    dp1.sent.clear()
    dp2 = connect(app, 2, ports={2: port(2, down=True)})
    # b1 was told first (its group towards h2 empties), then b2 resyncs with empty groups
    assert [m.buckets for m in dp1.sent if type(m).__name__ == "OFPGroupMod"] == [[]]
    inner = [m.message for m in dp2.sent if type(m).__name__ == "OFPBundleAddMsg"]
    assert [m.buckets for m in inner if type(m).__name__ == "OFPGroupMod" and m.command == ofp.OFPGC_ADD] == [[]]


# ------------------------------------------------------------------ with OVS
# The controller process against the patched ovs-vswitchd on the host: a
# dummy datapath with dummy ports (OVS's own testsuite does the same), so
# no kernel module, no root, no VM.

def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DummyOVS:
    def __init__(self, d, hosts):
        self.d, self.prog = str(d), presto.ovs_programs()
        self.env = dict(os.environ, OVS_RUNDIR=self.d, OVS_LOGDIR=self.d, OVS_DBDIR=self.d,
                        OVS_SYSCONFDIR=self.d)
        self.db = f"unix:{self.d}/db.sock"
        self.run(self.prog["ovsdb-tool"], "create", f"{self.d}/conf.db", self.prog["vswitch.ovsschema"])
        self.run(self.prog["ovsdb-server"], f"{self.d}/conf.db", f"--remote=punix:{self.d}/db.sock",
                 f"--pidfile={self.d}/ovsdb-server.pid", "--detach", "--no-chdir",
                 f"--log-file={self.d}/ovsdb-server.log")
        self.vsctl("--no-wait", "init")
        self.run(self.prog["ovs-vswitchd"], self.db, "--enable-dummy=override", "--disable-system",
                 f"--pidfile={self.d}/ovs-vswitchd.pid", "--detach", "--no-chdir",
                 f"--log-file={self.d}/ovs-vswitchd.log")
        self.port = free_port()
        args = []
        for n in hosts:
            args += ["--", "add-br", f"b{n}", "--", "set", "bridge", f"b{n}", "datapath_type=dummy",
                     "fail_mode=secure", "protocols=OpenFlow10,OpenFlow13,OpenFlow15",
                     f"other-config:datapath-id={n:016x}",
                     "--", "add-port", f"b{n}", f"v{n}", "--", "set", "interface", f"v{n}", "type=dummy",
                     "ofport_request=1",
                     "--", "add-port", f"b{n}", f"u{n}", "--", "set", "interface", f"u{n}", "type=dummy",
                     "ofport_request=2"] + self.controller_args(n)
        self.vsctl(*args)

    def controller_args(self, n):
        return ["--", "set-controller", f"b{n}", f"tcp:127.0.0.1:{self.port}",
                "--", "set", "controller", f"b{n}", "connection-mode=out-of-band", "max_backoff=1000"]

    def run(self, *argv):
        return subprocess.run(argv, env=self.env, capture_output=True, text=True, check=True,
                              timeout=120).stdout

    def vsctl(self, *args):
        return self.run(self.prog["ovs-vsctl"], f"--db={self.db}", "--timeout=60", *args)

    def ofctl(self, cmd, bridge, *args):
        return self.run(self.prog["ovs-ofctl"], "-O", "OpenFlow15", cmd, f"unix:{self.d}/{bridge}.mgmt", *args)

    def groups(self, bridge):
        import re
        return {int(m.group(1)): [int(b) for b in re.findall(r"bucket_id:(\d+)", line)]
                for line in self.ofctl("dump-groups", bridge).splitlines()
                for m in [re.search(r"group_id=(\d+)", line)] if m}

    def stop(self):
        import signal
        for name in ("ovs-vswitchd", "ovsdb-server"):
            try:
                os.kill(int(open(f"{self.d}/{name}.pid").read()), signal.SIGTERM)
            except (OSError, ValueError):
                pass


class ControllerProc:
    def __init__(self, d, plan, port):
        import sys
        self.d = str(d)
        self.sock, self.state_path = f"{self.d}/ctl.sock", f"{self.d}/state.json"
        self.log = open(f"{self.d}/controller.log", "a")
        self.p = subprocess.Popen([sys.executable, "-m", "dcnet.controller", "--plan", plan, "--listen",
                                   f"127.0.0.1:{port}", "--state", self.state_path, "--control", self.sock],
                                  stdout=self.log, stderr=subprocess.STDOUT)

    def state(self):
        from dcnet.controller import client
        return client.state(self.sock)

    def until(self, cond, what, timeout=60):
        import time
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.p.poll() is None, open(f"{self.d}/controller.log").read()[-2000:]
            try:
                st = self.state() if os.path.exists(self.sock) else None
            except (OSError, ValueError):
                st = None
            if st and cond(st):
                return st
            time.sleep(0.2)
        pytest.fail(f"{what}: {open(f'{self.d}/controller.log').read()[-2000:]}")

    def synced(self, after=0, which=None):
        return self.until(lambda st: all(s["synced"] and s["last_sync"] > after
                                         for k, s in st["switches"].items() if which in (None, k)),
                          "bridges not synced")

    def stop(self):
        self.p.terminate()
        self.p.wait(timeout=30)
        self.log.close()


@pytest.fixture
def ovs(tmp_path):
    if not presto.have_ovs():
        pytest.skip("the patched Open vSwitch is not built (make ovs)")
    o = DummyOVS(tmp_path, [1, 2])
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(small().to_dict()))
    c = ControllerProc(tmp_path, str(plan), o.port)
    yield o, c
    if c.p.poll() is None:
        c.stop()
    o.stop()


def test_controller_process_programs_resyncs_and_reacts_on_real_ovs(ovs):
    import time
    o, c = ovs
    st = c.synced()
    assert st["errors"] == [] and o.groups("b1") == {2: [1, 2]} and o.groups("b2") == {1: [1, 2]}
    assert len(o.ofctl("dump-flows", "b1").strip().splitlines()) == 1 + 5
    # a link report: the reply comes after both bridges' barriers
    from dcnet.controller import client
    ev = client.link(c.sock, "l2", "s1", 0)
    assert ev["groups_changed"] == 2 and ev["acked"] and o.groups("b1") == {2: [2]}
    client.link(c.sock, "l2", "s1", 100)
    # port-status: b2's uplink goes down administratively
    o.run(o.prog["ovs-appctl"], "netdev-dummy/set-admin-state", "u2", "down")
    c.until(lambda st: st["switches"]["1"]["groups"]["2"] == [], "no port-status reaction")
    assert o.groups("b1") == {2: []}
    o.run(o.prog["ovs-appctl"], "netdev-dummy/set-admin-state", "u2", "up")
    c.until(lambda st: st["switches"]["1"]["groups"]["2"] == [[1, 1], [2, 1]], "no port-status reaction")
    assert o.groups("b1") == {2: [1, 2]}
    # a bridge reconnects after its tables were changed behind the controller's back
    o.vsctl("del-controller", "b2")
    c.until(lambda st: not st["switches"]["2"]["connected"], "b2 still connected")
    o.ofctl("del-groups", "b2")
    t = time.time()
    o.vsctl(*o.controller_args(2)[1:])
    st = c.synced(after=t, which="2")
    assert st["switches"]["2"]["resyncs"] == 2 and o.groups("b2") == {1: [1, 2]}
    # a restarted controller: its flows come back, another cookie's flow stays
    c.stop()
    o.ofctl("del-flows", "b1", f"cookie={ofmsg.COOKIE:#x}/-1")
    o.ofctl("add-flow", "b1", "cookie=0x1,priority=1,actions=drop")
    t = time.time()
    c2 = ControllerProc(c.d, str(c.d) + "/plan.json", o.port)
    try:
        st = c2.synced(after=t)
        flows = o.ofctl("dump-flows", "b1")
        assert flows.count(f"cookie={ofmsg.COOKIE:#x}") == 5 and "cookie=0x1," in flows
        assert st["errors"] == []
    finally:
        c2.stop()
