"""Presto's OpenFlow controller: an os-ken application.

It reads the declared topology (the plan, dcnet/controller/plan.py),
accepts each host's Open vSwitch bridge over OpenFlow 1.5 (the bridge's
datapath ID names the host), and keeps every bridge's groups and flows
equal to what the plan gives for the links' state now:

  - on connect (first or again): one atomic bundle deletes the
    controller's flows (by cookie) and every group and installs the
    plan's tables; the bridge forwards with its old tables until the
    commit (a restarted controller or a reconnecting bridge resyncs);
  - on a port-status of a host's uplink port: the host's link goes down
    or up in the plan, and every connected bridge's groups that change
    are modified (a group towards an unreachable host drops);
  - on a link report on the control socket (a fabric link the
    controller cannot see over OpenFlow: the emulated fabric's Linux
    bridges, or a physical switch's link monitor): the same.

State (bridges, links, groups, events, errors) is written as JSON to
--state after every change and answered on the control socket:
one JSON request per line, one JSON reply per line:

    {"op": "state"}
    {"op": "link", "a": "l1", "b": "s1", "mbit": 0}     (0: down)

Run it with `python -m dcnet.controller` (dcnet/controller/__main__.py).
"""
import json
import logging
import os
import socket
import threading
import time

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, DEAD_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.lib import hub
from os_ken.ofproto import ofproto_v1_5

from dcnet.controller import ofmsg
from dcnet.controller.plan import Plan

LOG = logging.getLogger("dcnet.controller")


def _wake_sender_on_disconnect():
    """os-ken 4.2.2 with its default (native threads) hub never reports a
    switch that disconnects: Datapath.serve() joins its send thread once
    the receive loop ends, but hub.kill() cannot stop a thread, and the
    send thread waits on its queue for good, so close() and the
    DEAD_DISPATCHER event never come.  An empty message that closes the
    socket, queued when the receive loop ends, lets the send thread end."""
    from os_ken.controller import controller as ofc
    if getattr(ofc.Datapath, "_dcnet_wakes_sender", False):
        return
    recv = ofc.Datapath._recv_loop

    def _recv_loop(self):
        try:
            recv(self)
        finally:
            self.send(b"", close_socket=True)

    ofc.Datapath._recv_loop = _recv_loop
    ofc.Datapath._dcnet_wakes_sender = True


_wake_sender_on_disconnect()
MAX_EVENTS = 200

# set by dcnet/controller/__main__.py before os-ken instantiates the app
SETTINGS = {"plan": None, "state": None, "control": None}


class PrestoController(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_5.OFP_VERSION]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        with open(SETTINGS["plan"]) as f:
            self.plan = Plan(json.load(f))
        self.declared = dict(self.plan.rates)       # a link's rate when up
        self.state_path = SETTINGS.get("state")
        self.lock = threading.RLock()
        self.dps = {}           # dpid -> Datapath (connected, in MAIN)
        self.sw = {h["dpid"]: dict(host=h["name"], connected=False, synced=False, resyncs=0,
                                   last_sync=None, groups={}) for h in self.plan.hosts}
        self.pending = {}       # (dpid, xid) -> threading.Event: barriers and commits waited for
        self.bundle_id = 0
        self.history, self.errors = [], []
        self.started = time.time()
        self._write_state()
        if SETTINGS.get("control"):
            hub.spawn(self._control_loop, SETTINGS["control"])

    # ---------------------------------------------------------- state
    def snapshot(self):
        with self.lock:
            return dict(
                pid=os.getpid(), started=self.started, method=self.plan.method,
                flowcell_bytes=self.plan.flowcell_bytes,
                links=[dict(a=a, b=b, mbit=r) for (a, b), r in
                       sorted((tuple(sorted(k)), v) for k, v in self.plan.rates.items())],
                switches={str(d): dict(s, groups={str(k): v for k, v in s["groups"].items()})
                          for d, s in sorted(self.sw.items())},
                events=self.history[-MAX_EVENTS:], errors=self.errors[-MAX_EVENTS:])

    def _write_state(self):
        if not self.state_path:
            return
        tmp = self.state_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.snapshot(), f, indent=1, sort_keys=True)
        os.replace(tmp, self.state_path)

    def _event(self, kind, **kw):
        ev = dict(t=time.time(), kind=kind, **kw)
        self.history.append(ev)
        del self.history[:-MAX_EVENTS]
        LOG.info("%s", ev)
        return ev

    # ---------------------------------------------------------- OpenFlow
    @set_ev_cls(ofp_event.EventOFPStateChange, [MAIN_DISPATCHER, DEAD_DISPATCHER])
    def _state_change(self, ev):
        dp = ev.datapath
        with self.lock:
            if ev.state == MAIN_DISPATCHER:
                host = self.plan.by_dpid.get(dp.id)
                if host is None:
                    self.errors.append(dict(t=time.time(), dpid=dp.id, error="not in the plan"))
                    LOG.warning("datapath %016x is not in the plan", dp.id or 0)
                    self._write_state()
                    return
                self._event("connect", host=host["name"])
                # the uplink's state as the bridge reports it now (os-ken
                # read the port descriptions before MAIN): a change
                # reconfigures the other bridges; this one resyncs
                self.dps.pop(dp.id, None)
                desc = dp.ports.get(host["port_up"])
                if desc is not None:
                    self._uplink(dp, host, desc)
                self.dps[dp.id] = dp
                self.sw[dp.id]["connected"] = True
                self._resync(dp, host)
            elif ev.state == DEAD_DISPATCHER and dp.id in self.sw:
                if self.dps.get(dp.id) is dp:
                    del self.dps[dp.id]
                    self.sw[dp.id].update(connected=False, synced=False)
                    self._event("disconnect", host=self.sw[dp.id]["host"])
            self._write_state()

    def _resync(self, dp, host):
        """replace the bridge's tables with the plan's, in one bundle"""
        self.bundle_id = (self.bundle_id + 1) & 0xffffffff
        msgs = ofmsg.resync(dp, self.plan, host, self.bundle_id)
        s = self.sw[dp.id]
        s.update(synced=False, groups={dst: b for dst, b in self.plan.groups(host).items()})
        for m in msgs:
            dp.send_msg(m)
        s["commit_xid"] = msgs[-1].xid
        s["resyncs"] += 1
        self._event("resync", host=host["name"], messages=len(msgs))

    @set_ev_cls(ofp_event.EventOFPBundleCtrlMsg, MAIN_DISPATCHER)
    def _bundle_reply(self, ev):
        msg = ev.msg
        dp = msg.datapath
        with self.lock:
            s = self.sw.get(dp.id)
            if s and msg.type == dp.ofproto.OFPBCT_COMMIT_REPLY and s.get("commit_xid") == msg.xid:
                s.update(synced=True, last_sync=time.time())
                self._event("synced", host=s["host"])
                self._write_state()
            self._release(dp.id, msg.xid)

    @set_ev_cls(ofp_event.EventOFPBarrierReply, MAIN_DISPATCHER)
    def _barrier_reply(self, ev):
        with self.lock:
            self._release(ev.msg.datapath.id, ev.msg.xid)

    def _release(self, dpid, xid):
        e = self.pending.pop((dpid, xid), None)
        if e:
            e.set()

    @set_ev_cls(ofp_event.EventOFPErrorMsg, [CONFIG_DISPATCHER, MAIN_DISPATCHER])
    def _error(self, ev):
        msg = ev.msg
        with self.lock:
            self.errors.append(dict(t=time.time(), dpid=msg.datapath.id, type=msg.type, code=msg.code,
                                    xid=msg.xid))
            del self.errors[:-MAX_EVENTS]
            s = self.sw.get(msg.datapath.id)
            if s and s.get("commit_xid") == msg.xid:
                s["synced"] = False
            LOG.error("OpenFlow error from %s: type %s code %s", msg.datapath.id, msg.type, msg.code)
            self._write_state()

    @set_ev_cls(ofp_event.EventOFPPortStatus, MAIN_DISPATCHER)
    def _port_status(self, ev):
        msg = ev.msg
        dp, desc = msg.datapath, msg.desc
        ofp = dp.ofproto
        host = self.plan.by_dpid.get(dp.id)
        if host is None or desc.port_no != host["port_up"]:
            return
        with self.lock:
            self._uplink(dp, host, desc)

    def _uplink(self, dp, host, desc):
        """a host's uplink port is down (no carrier, or administratively)
        or up: its link in the plan follows, and the groups that change
        are modified on every bridge in sync"""
        ofp = dp.ofproto
        down = bool(desc.state & ofp.OFPPS_LINK_DOWN or desc.config & ofp.OFPPC_PORT_DOWN)
        key = frozenset((host["name"], host["leaf"]))
        if key not in self.plan.rates:
            return
        mbit = 0.0 if down else self.declared[key] or 1.0
        if self.plan.rates[key] == mbit:
            return
        self.plan.rates[key] = mbit
        self._reconfigure(f"port-status {host['name']}:{desc.port_no} {'down' if down else 'up'}",
                          wait=False)

    # ---------------------------------------------------------- reaction
    def _reconfigure(self, cause, wait=True, timeout=30.0):
        """modify every connected bridge's groups that the plan changed,
        each bridge's batch followed by a barrier; wait for the barriers
        (wait=False: from the event thread, which handles the replies)"""
        t0 = time.monotonic()
        events, changed, bridges = [], 0, 0
        for dpid, dp in list(self.dps.items()):
            host = self.plan.by_dpid[dpid]
            s = self.sw[dpid]
            mods = []
            for dst, b in self.plan.groups(host).items():
                if s["groups"].get(dst) != b:
                    s["groups"][dst] = b
                    mods.append(ofmsg.group_mod(dp, self.plan, dst, b, host["port_up"],
                                                command=dp.ofproto.OFPGC_MODIFY))
            if not mods:
                continue
            for m in mods:
                dp.send_msg(m)
            barrier = dp.ofproto_parser.OFPBarrierRequest(dp)
            dp.set_xid(barrier)
            e = threading.Event()
            self.pending[(dpid, barrier.xid)] = e
            dp.send_msg(barrier)
            events.append(e)
            changed += len(mods)
            bridges += 1
        # bridges not connected get the plan at their next resync
        ev = self._event("reconfigure", cause=cause, groups_changed=changed, bridges=bridges)
        self._write_state()
        if wait:
            self.lock.release()
            try:
                ok = all(e.wait(max(0.0, timeout - (time.monotonic() - t0))) for e in events)
            finally:
                self.lock.acquire()
            ev.update(acked=ok, groups_s=time.monotonic() - t0)
            self._write_state()
        return ev

    # ---------------------------------------------------------- control socket
    def _control_loop(self, path):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        srv.listen(8)
        while True:
            conn, _ = srv.accept()
            hub.spawn(self._control_conn, conn)

    def _control_conn(self, conn):
        with conn, conn.makefile("rw") as f:
            for line in f:
                try:
                    reply = self.control(json.loads(line))
                except Exception as e:          # a bad request: say why, keep serving
                    reply = dict(ok=False, error=f"{type(e).__name__}: {e}")
                f.write(json.dumps(reply) + "\n")
                f.flush()

    def control(self, req):
        op = req.get("op")
        if op == "state":
            return dict(ok=True, state=self.snapshot())
        if op == "link":
            with self.lock:
                self.plan.set_link(req["a"], req["b"], float(req["mbit"]))
                ev = self._reconfigure(f"link {req['a']}-{req['b']} {float(req['mbit'])} Mbit/s",
                                       timeout=float(req.get("timeout", 30)))
            return dict(ok=True, event=ev)
        raise ValueError(f"op {op!r}: state or link")
