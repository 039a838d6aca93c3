"""The FastLane paper's baseline, ICMP Source Quench (Sec. 2.2.1, TCP-Quench
in Sec. 4), as the bench runs it.

- The switch side: a fastlane qdisc in mode quench sends an RFC 792
  Source Quench (type 4) for each IPv4 drop, quoting the IP header and the
  first 8 bytes of the datagram, at the dropped packet's DSCP (not-ECT),
  as data; IPv6 drops send nothing (ICMPv6 has no Source Quench) and are
  counted.  The mode is a netlink attribute the kernel bounds (extack).
- The source: with net.ipv4.tcp_source_quench=1, a Source Quench for a
  sequence in flight makes the connection enter CWR (ssthresh from the
  congestion control, cwnd reduced as ACKs come back), once per window,
  and nothing is resent; with the sysctl at 0 (the default) the quench is
  counted by ICMP and ignored, as upstream (RFC 6633).

Uses the rigs of test_fastlane.py: the routed h1 -- sw -- h2 lab with the
port under test on sw's h2, and the blocked-path connections (frames
captured at the router, ICMP written by hand).
"""
import errno
import json
import socket
import struct
import subprocess
import threading
import time

import pytest

from dcnet.testbed.fabric import netns, ns_exec
from dcnet.testbed.netlab import sh, tc, tc_fails
from dcnet.wait import wait_until
from pktutil import fastlane_error, inet_csum
from test_fastlane import (NOTIFY_WAIT_S, SLOW, Conn, Sysctls, blocked,  # noqa: F401
                           notifications, parse, routed, sniff)

ICMP_SOURCE_QUENCH = 4
# tcp_info: tcpi_ca_state is byte 1; snd_ssthresh the u32 at 76, snd_cwnd at 80
TCP_CA_OPEN, TCP_CA_CWR = 0, 2
TCP_INFINITE_SSTHRESH = 0x7fffffff
DATA_DSCP = 10
QUENCH_KEYS = ["TcpExtTCPSourceQuench", "IcmpInSrcQuenchs", "TcpExtOutOfWindowIcmps", "TcpRetransSegs",
               "TcpExtTCPLossProbes", "TcpExtTCPTimeouts"]


def counters(ns):
    """TcpExt, Tcp and Icmp counters of namespace ns, read in this process
    (a process start costs a second or more in the debug guest, and the
    tests below must read them while data is in flight)"""
    out = {}
    with netns(ns):
        for path in ("/proc/thread-self/net/netstat", "/proc/thread-self/net/snmp"):
            with open(path) as f:
                lines = f.read().splitlines()
            for names, values in zip(lines[::2], lines[1::2]):
                pfx = names.split(":")[0]
                for k, v in zip(names.split()[1:], values.split()[1:]):
                    out[f"{pfx}{k}"] = int(v)
    return out


def moved(ns, c0, key, at_least, what, timeout=10):
    """wait until counter key of ns moved by at_least since c0"""
    return wait_until(lambda: (lambda c: c if c.get(key, 0) - c0.get(key, 0) >= at_least else None)(counters(ns)),
                      timeout, what, interval=0.05)


def tcp_state(s):
    """(ca_state, snd_cwnd, snd_ssthresh) of socket s"""
    info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    return info[1], struct.unpack_from("I", info, 80)[0], struct.unpack_from("I", info, 76)[0]


def tcp_unacked(s):
    return struct.unpack_from("I", s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104), 24)[0]


def quench_of(raw):
    """the fields of a Source Quench in Ethernet frame raw, else None"""
    if struct.unpack("!H", raw[12:14])[0] != 0x0800:
        return None
    ip = raw[14:]
    ihl = (ip[0] & 15) * 4
    if ip[9] != 1 or len(ip) < ihl + 8 or ip[ihl] != ICMP_SOURCE_QUENCH:
        return None
    icmp = ip[ihl:]
    quote = icmp[8:]
    qihl = (quote[0] & 15) * 4
    return dict(src=socket.inet_ntoa(ip[12:16]), dst=socket.inet_ntoa(ip[16:20]), dscp=ip[1] >> 2,
                ecn=ip[1] & 3, hdr_ok=inet_csum(ip[:ihl]) == 0, icmp_ok=inet_csum(icmp) == 0,
                code=icmp[1], unused=icmp[4:8], quote=quote, qihl=qihl,
                qsrc=socket.inet_ntoa(quote[12:16]), qdst=socket.inet_ntoa(quote[16:20]),
                qtos=quote[1], qlen=struct.unpack("!H", quote[2:4])[0],
                sport=struct.unpack("!H", quote[qihl:qihl + 2])[0],
                dport=struct.unpack("!H", quote[qihl + 2:qihl + 4])[0],
                seq=struct.unpack("!I", quote[qihl + 4:qihl + 8])[0])


def quenches(frames):
    """the Source Quenches h1 received, as sniff() returns frames"""
    return [q for _, out, raw in frames if not out for q in [quench_of(raw)] if q]


# ------------------------------------------------------------ configuration

TCA_KIND, TCA_OPTIONS = 1, 2
TCA_FASTLANE_RATE, TCA_FASTLANE_MODE = 3, 8
RTM_NEWQDISC = 36
NLM_F_REQUEST, NLM_F_ACK, NLM_F_EXCL, NLM_F_CREATE = 1, 4, 0x200, 0x400
NETLINK_CAP_ACK, NETLINK_EXT_ACK, SOL_NETLINK = 10, 11, 270
NLMSGERR_ATTR_MSG = 1


def nla(atype, payload):
    return struct.pack("=HH", 4 + len(payload), atype) + payload + b"\0" * (-len(payload) % 4)


def add_fastlane_raw(ns, dev, mode):
    """RTM_NEWQDISC of a root fastlane qdisc with TCA_FASTLANE_MODE as the
    u8 mode, as tc would never send it: (errno, extack message)"""
    with netns(ns):
        ifindex = socket.if_nametoindex(dev)
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
    try:
        s.setsockopt(SOL_NETLINK, NETLINK_EXT_ACK, 1)
        s.setsockopt(SOL_NETLINK, NETLINK_CAP_ACK, 1)
        opts = nla(TCA_FASTLANE_RATE, struct.pack("=Q", 1250000)) + nla(TCA_FASTLANE_MODE, bytes([mode]))
        body = struct.pack("=BxxxiIII", socket.AF_UNSPEC, ifindex, 0x10000, 0xffffffff, 0)
        body += nla(TCA_KIND, b"fastlane\0") + nla(TCA_OPTIONS, opts)
        s.send(struct.pack("=IHHII", 16 + len(body), RTM_NEWQDISC,
                           NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, 1, 0) + body)
        r = s.recv(65536)
    finally:
        s.close()
    err = -struct.unpack_from("=i", r, 16)[0]
    msg, off = "", 16 + 4 + 16
    while off + 4 <= len(r):
        ln, at = struct.unpack_from("=HH", r, off)
        if ln < 4:
            break
        if at & 0x3fff == NLMSGERR_ATTR_MSG:
            msg = r[off + 4:off + ln].rstrip(b"\0").decode()
        off += (ln + 3) & ~3
    return err, msg


def test_quench_mode_configuration(routed):
    sw, h1 = routed.lab.sw, routed.lab.ns("h1")
    tc("qdisc del dev h2 root", sw, check=False)
    tc("qdisc add dev h2 root fastlane limit 64kb rate 10mbit", sw)
    # the default mode, FastLane, is not printed (as before the option)
    assert "mode" not in json.loads(tc("-j qdisc show dev h2", sw))[0]["options"]
    tc("qdisc change dev h2 root fastlane mode quench", sw)
    opts = json.loads(tc("-j qdisc show dev h2", sw))[0]["options"]
    assert opts["mode"] == "quench" and (opts["limit"], opts["nf_limit"], opts["dscp"]) == (65536, 1638, 45), opts
    st = json.loads(tc("-s -j qdisc show dev h2", sw))[0]
    assert (st["quench_generated"], st["quench_none"]) == (0, 0), st
    # a change without mode keeps it
    tc("qdisc change dev h2 root fastlane dscp 20", sw)
    assert json.loads(tc("-j qdisc show dev h2", sw))[0]["options"]["mode"] == "quench"
    assert "mode" in tc_fails("qdisc change dev h2 root fastlane mode ecn", sw)
    tc("qdisc change dev h2 root fastlane mode fastlane", sw)
    assert "mode" not in json.loads(tc("-j qdisc show dev h2", sw))[0]["options"]
    tc("qdisc del dev h2 root", sw)
    # the kernel bounds the attribute itself: a mode it does not know is
    # refused with its reason, and no qdisc is made
    err, msg = add_fastlane_raw(sw, "h2", 2)
    assert err == errno.ERANGE and "out of range" in msg, (err, msg)
    assert "fastlane" not in tc("qdisc show dev h2", sw)
    err, msg = add_fastlane_raw(sw, "h2", 1)
    assert err == 0, (err, msg)
    assert json.loads(tc("-j qdisc show dev h2", sw))[0]["options"]["mode"] == "quench"
    tc("qdisc del dev h2 root", sw)
    # the host side: off by default, a boolean
    assert sh("sysctl -n net.ipv4.tcp_source_quench", ns=h1).strip() == "0"
    assert subprocess.run(ns_exec(h1) + ["sysctl", "-qw", "net.ipv4.tcp_source_quench=2"],
                          capture_output=True).returncode != 0


# ------------------------------------------------------------ the switch side

def burst_and_capture(port, v6, seqs, tos, key):
    """a burst through the port under test, and what h1 receives until the
    port's counter key (quench_generated) says everything arrived"""
    done = threading.Event()
    t, got = port.capture(NOTIFY_WAIT_S, stop=done)
    try:
        iplen = port.burst(v6, seqs, tos=tos)
        if not v6:
            wait_until(lambda: len(quenches(got)) >= port.stats()[key], NOTIFY_WAIT_S,
                       "every Source Quench the port generated reached h1", interval=0.2)
        wait_until(lambda: (lambda st: st if st["packets"] + st["drops"] >= len(seqs) else None)(port.stats()),
                   NOTIFY_WAIT_S, "the port sent or dropped the burst", interval=0.2)
        time.sleep(1)
    finally:
        done.set()
        t.join()
    return iplen, got


def test_each_ipv4_drop_yields_one_source_quench(routed):
    """RFC 792 at the data's DSCP: type 4 code 0, the IP header and 8 bytes
    of each dropped packet, to its source, not-ECT; no FastLane
    notification"""
    port = routed.reset(fl=f"limit 6000 rate {SLOW} mode quench")
    seqs = [1000 + i * 1000 for i in range(40)]
    iplen, got = burst_and_capture(port, False, seqs, (DATA_DSCP << 2) | 1, "quench_generated")
    st = port.stats()
    qs = [q for q in quenches(got) if q["dport"] == 5001]
    src, dst = port.addrs[False]
    print(f"{len(seqs)} sent, {st['drops']} dropped, {len(qs)} Source Quenches at h1, stats {st}")
    assert 20 <= st["drops"] <= len(seqs) - 4, st
    assert st["quench_generated"] == st["drops"] and st["quench_none"] == 0, st
    assert st["nf_generated"] == 0 and st["nf_not_tcp"] == 0, st
    assert len(qs) == st["drops"], "not exactly one Source Quench per drop"
    assert notifications(got) == [], "a FastLane notification in mode quench"
    got_seqs = sorted(q["seq"] for q in qs)
    assert len(set(got_seqs)) == len(got_seqs) and set(got_seqs) <= set(seqs), got_seqs
    for q in qs:
        assert q["dst"] == src and q["src"] == "10.0.1.254", q
        assert q["code"] == 0 and q["unused"] == b"\0\0\0\0"
        assert q["hdr_ok"] and q["icmp_ok"]
        # the data's DSCP, ECN cleared
        assert (q["dscp"], q["ecn"]) == (DATA_DSCP, 0), q
        # the IP header (as forwarded: the TTL one less) and 8 bytes
        assert len(q["quote"]) == 20 + 8 and q["qihl"] == 20
        assert (q["qsrc"], q["qdst"], q["qlen"], q["qtos"]) == (src, dst, iplen, (DATA_DSCP << 2) | 1), q
        assert (q["sport"], q["dport"]) == (40000, 5001)


def test_ipv6_drops_send_nothing_in_quench_mode(routed):
    """ICMPv6 has no Source Quench: IPv6 drops are counted (quench_none),
    nothing goes back"""
    port = routed.reset(fl=f"limit 6000 rate {SLOW} mode quench")
    _, got = burst_and_capture(port, True, range(0, 40000, 1000), 0, "quench_generated")
    st = port.stats()
    back = [p for _, out, raw in got if not out for p in [parse(raw)] if p and p.get("nf")]
    icmp6 = [raw for _, out, raw in got if not out and raw[12:14] == b"\x86\xdd" and raw[20] == 58
             and raw[54] < 128]
    print(f"IPv6 in mode quench: {st}")
    assert st["drops"] >= 20, st
    assert st["quench_none"] == st["drops"] and st["quench_generated"] == 0 and st["nf_generated"] == 0, st
    assert back == [] and icmp6 == [] and quenches(got) == []


# ------------------------------------------------------------ the source

def quench_for(b, raw, seq=None):
    """the Ethernet frame of a Source Quench from the router to h1 about
    frame raw (h1's segment, captured at the router)"""
    ip = bytearray(raw[14:14 + 20 + 8])
    if seq is not None:
        ip[24:28] = struct.pack("!I", seq)
    err = fastlane_error(False, "10.0.1.254", socket.inet_ntoa(bytes(ip[12:16])), ip, dscp=0,
                         itype=ICMP_SOURCE_QUENCH)
    return b"".join(b.macs["h1"]) + b"\x08\x00" + err


@pytest.mark.parametrize("on", [1, 0], ids=["sysctl-on", "sysctl-off"])
def test_source_quench_reduces_cwnd_once_and_resends_nothing(blocked, on):
    """Ten segments in flight for 4 s (netem delay towards h2), a Source
    Quench for one of them three times, and one beyond snd_nxt.  On: the
    connection enters CWR once with CUBIC's ssthresh (7 of 10), the window
    shrinks as the ACKs come back, nothing is resent.  Off: ICMP counts
    the quenches, TCP ignores them (slow start goes on), as upstream."""
    with Sysctls(blocked.h1, tcp_source_quench=on, tcp_fastlane=0, tcp_early_retrans=0):
        b = blocked.connect(False)
        try:
            # in flight, not lost: the ACKs come 4 s later
            tc("qdisc replace dev h2 root netem delay 4s limit 10000", b.lab.sw)
            b.conn.c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
            nbytes = 10 * 1448
            c0 = counters(b.h1)
            segs = b.send_and_capture(nbytes, 0.5)
            assert segs, "no data in flight"
            _, p0, raw0 = segs[-1]
            oow = quench_for(b, raw0, seq=(p0["seq"] + 10_000_000) & 0xffffffff)
            b.send_frames([oow] + [quench_for(b, raw0)] * 3)
            c1 = moved(b.h1, c0, "IcmpInSrcQuenchs", 4, "h1 received the 4 Source Quenches")
            ca, cwnd, ssthresh = tcp_state(b.conn.c)
            in_flight = b.conn.received < nbytes
            d = {k: c1.get(k, 0) - c0.get(k, 0) for k in QUENCH_KEYS}
            print(f"tcp_source_quench={on}: at once ca_state {ca} cwnd {cwnd} ssthresh {ssthresh} "
                  f"(in flight: {in_flight}), {d}")
            assert in_flight, "the data was acknowledged before the quenches were judged"
            # RFC 5927: the one beyond snd_nxt is refused before either
            assert d["TcpExtOutOfWindowIcmps"] == 1, d
            if on:
                assert d["TcpExtTCPSourceQuench"] == 1, d
                assert (ca, ssthresh) == (TCP_CA_CWR, 7), (ca, cwnd, ssthresh)
            else:
                assert d["TcpExtTCPSourceQuench"] == 0, d
                assert (ca, ssthresh) == (TCP_CA_OPEN, TCP_INFINITE_SSTHRESH), (ca, cwnd, ssthresh)
            wait_until(lambda: b.conn.received >= nbytes, 30, "h2 received the data")
            wait_until(lambda: tcp_unacked(b.conn.c) == 0, 10, "h1 took the ACKs")
            ca, cwnd, ssthresh = tcp_state(b.conn.c)
            d = {k: v - c0.get(k, 0) for k, v in counters(b.h1).items() if k in QUENCH_KEYS}
            print(f"tcp_source_quench={on}: after the ACKs ca_state {ca} cwnd {cwnd} ssthresh {ssthresh}, {d}")
            # nothing resent, at once or later: the quench is not a loss
            assert d["TcpRetransSegs"] == 0 and d["TcpExtTCPTimeouts"] == 0, d
            if on:
                assert cwnd <= 7 and ssthresh == 7, (ca, cwnd, ssthresh)
                assert d["TcpExtTCPSourceQuench"] == 1, d
            else:
                assert cwnd > 10 and ssthresh == TCP_INFINITE_SSTHRESH, (ca, cwnd, ssthresh)
                assert d["TcpExtTCPSourceQuench"] == 0, d
        finally:
            b.release()


def test_quench_port_slows_a_real_flow(routed):
    """end to end, as the bench's tcp-quench cell runs: a flow through a
    port in mode quench, h1 with tcp_source_quench on; every drop is
    quenched, h1 acts on quenches and gets all its data through"""
    port = routed.reset(rate="250kbit", fl="limit 8000 rate 250kbit mode quench")
    h1 = port.lab.ns("h1")
    with Sysctls(h1, tcp_source_quench=1, tcp_fastlane=0):
        c0 = counters(h1)
        conn = Conn(port.lab, False, port=7300)
        data = b"x" * 100_000
        conn.c.sendall(data)
        conn.c.shutdown(socket.SHUT_WR)
        conn.close()
        st = port.stats()
        c1 = wait_until(lambda: (lambda c: c if c["IcmpInSrcQuenchs"] - c0["IcmpInSrcQuenchs"] >=
                                 port.stats()["quench_generated"] else None)(counters(h1)),
                        NOTIFY_WAIT_S, "every Source Quench reached h1", interval=0.2)
    d = {k: c1.get(k, 0) - c0.get(k, 0) for k in QUENCH_KEYS}
    print(f"drops {st['drops']}, {d}, received {conn.received}")
    assert conn.received == len(data)
    assert st["drops"] > 0, "the port never dropped: nothing tested"
    assert st["quench_generated"] == st["drops"] and st["nf_generated"] == 0, st
    assert d["TcpExtTCPSourceQuench"] > 0, d
    # at most one a window: far fewer acted on than received
    assert d["TcpExtTCPSourceQuench"] <= d["IcmpInSrcQuenchs"], d
