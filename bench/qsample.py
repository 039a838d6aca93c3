#!/usr/bin/env python3
"""Sample a qdisc's queue in the current network namespace over netlink.

    qsample.py DEV KIND PERIOD_MS OUT

Every PERIOD_MS (CLOCK_MONOTONIC) it dumps the qdiscs (RTM_GETQDISC),
takes the one of kind KIND on DEV and records
[t_us, backlog bytes, qlen packets, packets sent, CE marks (RED's
xstats), drops].  On SIGTERM it writes them as JSON to OUT.  One netlink
round trip per sample, no process started per sample: cheap enough to run
beside a benchmark in the guest.
"""
import json
import os
import signal
import socket
import struct
import sys
import time

RTM_NEWQDISC, RTM_GETQDISC = 36, 38
NLM_F_REQUEST, NLM_F_DUMP = 1, 0x300
NLMSG_DONE, NLMSG_ERROR = 3, 2
TCA_KIND, TCA_STATS2, TCA_XSTATS = 1, 7, 4
TCA_STATS_BASIC, TCA_STATS_QUEUE = 1, 3


def attrs(buf, off, end):
    while off + 4 <= end:
        ln, typ = struct.unpack_from("HH", buf, off)
        if ln < 4:
            break
        yield typ & 0x3fff, off + 4, off + ln
        off += (ln + 3) & ~3


def parse(buf, ifindex, kind):
    """(done, record or None) for one recv() of a dump"""
    off, rec, done = 0, None, False
    while off + 16 <= len(buf):
        ln, typ, _fl, _seq, _pid = struct.unpack_from("IHHII", buf, off)
        if typ == NLMSG_DONE or typ == NLMSG_ERROR:
            done = True
        elif typ == RTM_NEWQDISC:
            _fam, idx, _h, _p, _i = struct.unpack_from("BxxxiIII", buf, off + 16)
            if idx == ifindex:
                k, q, b, x = None, None, None, None
                for t, s, e in attrs(buf, off + 36, off + ln):
                    if t == TCA_KIND:
                        k = buf[s:e].split(b"\0")[0].decode()
                    elif t == TCA_XSTATS:
                        x = buf[s:e]
                    elif t == TCA_STATS2:
                        for t2, s2, e2 in attrs(buf, s, e):
                            if t2 == TCA_STATS_BASIC:
                                b = struct.unpack_from("QI", buf, s2)
                            elif t2 == TCA_STATS_QUEUE:
                                q = struct.unpack_from("IIIII", buf, s2)
                if k == kind and q and b:
                    marked = struct.unpack_from("IIII", x)[3] if kind == "red" and x and len(x) >= 16 else 0
                    rec = (q[1], q[0], b[1], marked, q[2])
        if ln < 16:
            break
        off += (ln + 3) & ~3
    return done, rec


def main():
    dev, kind, period_ms, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    ifindex = socket.if_nametoindex(dev)
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)      # NETLINK_ROUTE
    s.bind((0, 0))
    samples = []
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    req = struct.pack("IHHII", 36, RTM_GETQDISC, NLM_F_REQUEST | NLM_F_DUMP, 1, 0) + \
        struct.pack("BxxxiIII", socket.AF_UNSPEC, 0, 0, 0, 0)
    period = period_ms / 1000
    nxt = time.clock_gettime(time.CLOCK_MONOTONIC)
    seq = 1
    while not stop:
        seq += 1
        s.send(req[:8] + struct.pack("I", seq) + req[12:])
        t = time.clock_gettime(time.CLOCK_MONOTONIC)
        rec, done = None, False
        while not done:
            done, r = parse(s.recv(65536), ifindex, kind)
            rec = r or rec
        if rec:
            samples.append([int(t * 1e6)] + list(rec))
        nxt += period
        now = time.clock_gettime(time.CLOCK_MONOTONIC)
        if nxt < now:
            nxt = now + period
        try:
            time.sleep(nxt - now)
        except InterruptedError:
            pass
    with open(out + ".tmp", "w") as f:
        json.dump(dict(fields=["t_us", "backlog", "qlen", "packets", "marked", "drops"], samples=samples), f)
    os.rename(out + ".tmp", out)


if __name__ == "__main__":
    main()
