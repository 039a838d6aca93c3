"""FastLane at the source, issue 20 item 7: notifications for connections
in the states the main tests do not reach.

- A TCP Fast Open server's child socket is a full socket in SYN_RECV
  until the client acknowledges its SYN-ACK, and it may send data before
  that.  A notification for its SYN-ACK resends the SYN-ACK at once (as
  tcp_fastopen_synack_timer() would at its timeout); one for its data
  goes through Algorithm 1 like any data (until issue 20 both were
  counted stale and nothing was resent).
- A notification that matches a TIME_WAIT socket is counted
  (TCPFastLaneStale: nothing of that connection is in flight any more)
  and dropped: it never makes the host send, whatever it names (data,
  FIN, the last ACK), and the TIME_WAIT socket stays.

Uses the blocked-path rig of test_fastlane.py (h1 -- sw -- h2, frames
captured at the router and notifications written by hand).
"""
import socket
import time

import pytest

from dcnet.testbed.fabric import netns
from dcnet.testbed.netlab import sh, tc
from test_fastlane import (FL_KEYS, Sysctls, blocked,  # noqa: F401
                           delta, listener_and_client, nstat, parse, sniff, splats,
                           tcp_payload_len)

TCP_FASTOPEN = 23
MSG_FASTOPEN = 0x20000000
# net.ipv4.tcp_fastopen: client on, without a cookie (TFO_CLIENT_ENABLE |
# TFO_CLIENT_NO_COOKIE); server on, no cookie required (TFO_SERVER_ENABLE
# | TFO_SERVER_COOKIE_NOT_REQD): the first SYN's data is taken
TFO_CLIENT = 0x1 | 0x4
TFO_SERVER = 0x2 | 0x200


class FastOpen:
    """h1 connects to a Fast Open listener on h2 with data in its SYN; the
    path h2 -> h1 is blocked (netem on the router's port to h1), so the
    child socket on h2 stays in SYN_RECV while the test looks"""

    def __init__(self, b, v6):
        self.b, self.v6 = b, v6
        b.release()
        b.v6 = v6
        b.port += 1
        self.port = b.port
        self.h2 = b.lab.ns("h2")
        self.dst = b.lab.ip("h2", v6)
        self.fam = socket.AF_INET6 if v6 else socket.AF_INET
        self.sysctls = [Sysctls(b.h1, tcp_fastopen=TFO_CLIENT),
                        Sysctls(self.h2, tcp_fastopen=TFO_SERVER, tcp_fastlane=1)]
        for s in self.sysctls:
            s.__enter__()
        # the hosts' neighbour entries for the router stay resolved: with
        # the path to h1 blocked, h1's ARP or ND for the router would
        # never be answered, and its SYN never sent
        for h, i in (("h1", 1), ("h2", 2)):
            rm = ":".join(f"{x:02x}" for x in b.macs[h][1])
            sh(f"ip neigh replace 10.0.{i}.254 lladdr {rm} dev eth0 nud permanent;"
               f" ip -6 neigh replace fd00:{i}::fe lladdr {rm} dev eth0 nud permanent", ns=b.lab.ns(h))
        tc("qdisc del dev h2 root", b.lab.sw, check=False)
        tc("qdisc add dev h1 root netem loss 100%", b.lab.sw)
        with netns(self.h2):
            self.ls = socket.socket(self.fam, socket.SOCK_STREAM)
            self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.ls.setsockopt(socket.IPPROTO_TCP, TCP_FASTOPEN, 8)
            self.ls.bind((self.dst, self.port))
            self.ls.listen(4)
        self.ls.settimeout(5)
        with netns(b.h1):
            self.c = socket.socket(self.fam, socket.SOCK_STREAM)
        self.c.setblocking(False)
        self.child = None

    def syn_with_data(self, data=b"q" * 100):
        try:
            self.c.sendto(data, MSG_FASTOPEN, (self.dst, self.port))
        except BlockingIOError:
            pass

    def synack(self, p):
        return p["sport"] == self.port and p["flags"] & 0x12 == 0x12

    def close(self):
        for s in (self.child, self.c, self.ls):
            if s:
                s.close()
        tc("qdisc del dev h1 root", self.b.lab.sw, check=False)
        for s in reversed(self.sysctls):
            s.__exit__()


def wait_frames(got, pred, n, seconds):
    """the first n frames (ts, p, raw) the capture got has sent to the
    router that pred() picks, waiting up to seconds for them"""
    end = time.time() + seconds
    while True:
        hit = [(ts, p, raw) for ts, out, raw in list(got) for p in [parse(raw)]
               if p and not out and pred(p)]
        if len(hit) >= n or time.time() > end:
            return hit[:n]
        time.sleep(0.005)


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_fastopen_child_synack_is_resent_at_once(blocked, v6):
    """a notification for the SYN-ACK of a Fast Open child (a full socket
    in SYN_RECV, with the client's data already taken) resends the
    SYN-ACK at once: taken (Notify), resent (CtlResend), never stale"""
    fo = FastOpen(blocked, v6)
    try:
        n0 = nstat(fo.h2)
        t, got = sniff(blocked.lab.sw, "h2", 3.0)
        t_syn = time.time()
        fo.syn_with_data()
        first = wait_frames(got, fo.synack, 1, 2.0)
        assert first, "no SYN-ACK seen"
        t0, p0, raw0 = first[0]
        t_nf = time.time()
        blocked.notify(raw0, to="h2")
        t.join()
        d = delta(n0, nstat(fo.h2), FL_KEYS + ["TcpExtTCPFastOpenPassive"])
        again = [ts - t_nf for ts, out, raw in got for p in [parse(raw)]
                 if p and not out and fo.synack(p) and p["seq"] == p0["seq"] and ts >= t_nf]
        print(f"Fast Open SYN-ACK: {d}; SYN-ACK {t0 - t_syn:.3f} s after the SYN, notified"
              f" {t_nf - t0:.3f} s after it, copies after the notification at {[round(x, 3) for x in again]} s")
        assert d["TcpExtTCPFastOpenPassive"] == 1, f"not a Fast Open child: {d}"
        assert d["TcpExtTCPFastLaneNotify"] == 1 and d["TcpExtTCPFastLaneCtlResend"] == 1, d
        assert d["TcpExtTCPFastLaneStale"] == 0, d
        assert again and again[0] < 0.5, "the SYN-ACK was not resent at once"
    finally:
        fo.close()


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_fastopen_child_data_is_resent(blocked, v6):
    """the data a Fast Open child sends in SYN_RECV (before the client's
    ACK) is data in flight: a notification for one of its segments
    resends exactly that segment (Algorithm 1), not counted stale.  It
    must come before the child's second SYN-ACK timeout (3 s), which
    enters CA_Loss: then the notification would be stale"""
    fo = FastOpen(blocked, v6)
    try:
        n0 = nstat(fo.h2)
        t, got = sniff(blocked.lab.sw, "h2", 3.5)
        t_syn = time.time()
        fo.syn_with_data()
        assert wait_frames(got, fo.synack, 1, 2.0), "no SYN-ACK seen"
        fo.child, _ = fo.ls.accept()
        fo.child.send(b"d" * 3 * 1000)

        def data(p):
            return p["sport"] == fo.port and tcp_payload_len(p) > 0
        segs = wait_frames(got, data, 2, 1.0)
        assert len(segs) == 2, f"no data from the child in flight: {len(segs)}"
        ts1, p1, raw1 = segs[1]
        t_nf = time.time()
        blocked.notify(raw1, to="h2")
        t.join()
        d = delta(n0, nstat(fo.h2), FL_KEYS + ["TcpExtTCPFastOpenPassive"])
        resent = [(ts - t_nf, p) for ts, out, raw in got for p in [parse(raw)]
                  if p and not out and data(p) and p["seq"] == p1["seq"] and ts >= t_nf]
        print(f"Fast Open child data: {d}; notified {t_nf - t_syn:.3f} s after the SYN,"
              f" resent {[(round(x, 3), tcp_payload_len(p)) for x, p in resent]}")
        assert d["TcpExtTCPFastOpenPassive"] == 1, f"not a Fast Open child: {d}"
        assert d["TcpExtTCPFastLaneNotify"] == 1 and d["TcpExtTCPFastLaneRetrans"] == 1, d
        assert d["TcpExtTCPFastLaneStale"] == 0, d
        assert resent and tcp_payload_len(resent[0][1]) == tcp_payload_len(p1), resent
    finally:
        fo.close()


def time_wait_sockets(ns, port):
    out = sh(f"ss -Htan state time-wait '( dport = :{port} )'", ns=ns)
    return [ln for ln in out.splitlines() if ln.strip()]


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_time_wait_notification_is_counted_and_dropped(blocked, v6):
    """h1 closes first and holds the connection in TIME_WAIT; notifications
    for its data, its FIN and its last ACK (and a burst of the last) find
    the TIME_WAIT socket: each counted stale, none acted on, h1 sends
    nothing, the TIME_WAIT socket stays, no splat"""
    b = blocked
    b.release()
    tc("qdisc del dev h2 root", b.lab.sw, check=False)
    b.v6 = v6
    b.port += 1
    port = b.port
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    dst = b.lab.ip("h2", v6)
    ls, c = listener_and_client(b, fam, dst, port)
    ls.settimeout(10)
    c.settimeout(10)                    # blocking, with a bound
    s = None
    try:
        bad = splats()
        t, got = sniff(b.lab.sw, "h1", 2.5)
        c.connect((dst, port))
        s, _ = ls.accept()
        s.settimeout(10)
        c.sendall(b"w" * 2000)
        n = 0
        while n < 2000:
            n += len(s.recv(65536))
        c.close()                       # h1's FIN first: h1 ends in TIME_WAIT
        assert s.recv(1) == b""
        s.close()
        t.join()
        assert time_wait_sockets(b.h1, port), "h1 is not in TIME_WAIT"
        mine = [(ts, p, raw) for ts, out, raw in got for p in [parse(raw)]
                if p and not out and p["dport"] == port]
        data = [x for x in mine if tcp_payload_len(x[1]) > 0]
        fin = [x for x in mine if x[1]["flags"] & 0x01]
        assert data and fin, f"data {len(data)}, FIN {len(fin)}"
        # the last ACK: after h1's FIN, acknowledging h2's
        last_ack = [x for x in mine if x[0] >= fin[-1][0] and x[1]["flags"] == 0x10]
        assert last_ack, "no last ACK seen"
        raws = [data[-1][2], fin[-1][2], last_ack[-1][2]]
        n0 = nstat(b.h1)
        t, got = sniff(b.lab.sw, "h1", 1.5)
        for raw in raws:
            b.notify(raw)
        b.notify(last_ack[-1][2], count=50)
        t.join()
        d = delta(n0, nstat(b.h1), FL_KEYS + ["TcpExtTCPFastOpenPassive"])
        sent = [p for ts, out, raw in got for p in [parse(raw)] if p and not out and p["dport"] == port]
        print(f"TIME_WAIT: {d}, h1 sent {len(sent)} frames")
        assert d["TcpExtTCPFastLaneStale"] == 3 + 50, d
        assert all(d[k] == 0 for k in FL_KEYS if k != "TcpExtTCPFastLaneStale"), d
        assert sent == [], "h1 acted on a notification for a TIME_WAIT socket"
        assert time_wait_sockets(b.h1, port), "the TIME_WAIT socket is gone"
        assert splats() == bad, "a splat: " + "\n".join(splats()[len(bad):])
    finally:
        for x in (s, c, ls):
            if x:
                x.close()
