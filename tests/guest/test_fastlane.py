"""FastLane's switch side in the booted kernel: the fastlane qdisc on the
router namespace's port towards h2 turns what it drops into notifications
for h1, configured with the project's tc.

Packets are written by hand (AF_PACKET on h1's eth0) so that each dropped
sequence number is known, and read back by hand on the same device: every
dropped TCP packet yields exactly one notification, with the addresses
swapped, the codepoint set, the TCP header and options intact, the
original IP length and a valid IPv4 header checksum.
"""
import contextlib
import json
import os
import socket
import struct
import subprocess
import threading
import time

import pytest

from dcnet import config
from dcnet.testbed.fabric import netns, ns_exec
from dcnet.testbed.netlab import sh, tc, tc_fails
from pktutil import fastlane_error, fastlane_quote_of, inet_csum

from dcnet.wait import wait_until

TC = config.get("DCNET_TC")
DSCP = 45
ETH_P_ALL = 0x0003
SO_RCVBUFFORCE = 33
SO_SNDBUFFORCE = 32
# NOP NOP timestamps: options a notification must keep
TCP_OPTS = bytes([1, 1, 8, 10, 0, 0, 0x12, 0x34, 0, 0, 0, 0])
PAYLOAD = 1000
# a notification's frame: Ethernet, IPv4, ICMP, the quoted IPv4 and TCP
# headers with TCP_OPTS
NF_FRAME = 14 + 20 + 8 + 20 + 20 + len(TCP_OPTS)
# The port under test drains a 1066-byte frame in 85 ms: slower than
# python writes a burst even in the debug guest (at 1 Mbit/s there, the
# port drained the burst about as fast as it came and hardly dropped)
SLOW = "100kbit"
# how long the notifications of a burst may take to reach h1 (seconds,
# x DCNET_TIMEOUT_SCALE): the capture waits for them, not for a clock
NOTIFY_WAIT_S = 60


def mac(ns, dev):
    return bytes.fromhex(json.loads(sh(f"ip -j link show dev {dev}", ns=ns))[0]["address"].replace(":", ""))


def tcp_segment(sport, dport, seq, payload, flags=0x18):
    th = struct.pack("!HHIIBBHHH", sport, dport, seq, 1, (5 + len(TCP_OPTS) // 4) << 4, flags,
                     1000, 0xbeef, 0)
    return th + TCP_OPTS + payload


def frame(v6, smac, dmac, src, dst, l4, proto=6, tos=0):
    if v6:
        ip = struct.pack("!IHBB", (6 << 28) | (tos << 20), len(l4), proto, 64) + \
            socket.inet_pton(socket.AF_INET6, src) + socket.inet_pton(socket.AF_INET6, dst)
        return dmac + smac + b"\x86\xdd" + ip + l4
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(l4), 0, 0x4000, 64, proto, 0,
                     socket.inet_aton(src), socket.inet_aton(dst))
    ip = ip[:10] + struct.pack("!H", inet_csum(ip)) + ip[12:]
    return dmac + smac + b"\x08\x00" + ip + l4


def parse_ip(v6, ip, **extra):
    """IP/TCP fields of IP packet ip (TCP directly after its header), or
    None"""
    if v6:
        if ip[6] != 6:
            return None
        ihl = 40
        tc_ = (struct.unpack("!I", ip[0:4])[0] >> 20) & 0xff
        dscp, ecn = tc_ >> 2, tc_ & 3
        iplen = 40 + struct.unpack("!H", ip[4:6])[0]
        hdr_ok = True
        src = socket.inet_ntop(socket.AF_INET6, ip[8:24])
        dst = socket.inet_ntop(socket.AF_INET6, ip[24:40])
    else:
        ihl = (ip[0] & 15) * 4
        if ip[9] != 6:
            return None
        dscp, ecn = ip[1] >> 2, ip[1] & 3
        iplen = struct.unpack("!H", ip[2:4])[0]
        hdr_ok = inet_csum(ip[:ihl]) == 0
        src, dst = socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20])
    tcp = ip[ihl:]
    d = dict(v6=v6, dscp=dscp, ecn=ecn, iplen=iplen, hdr_ok=hdr_ok, src=src, dst=dst,
             sport=struct.unpack("!H", tcp[0:2])[0], dport=struct.unpack("!H", tcp[2:4])[0],
             seq=struct.unpack("!I", tcp[4:8])[0], opts=tcp[20:(tcp[12] >> 4) * 4],
             flags=tcp[13], caplen=len(ip), nf=False)
    d.update(extra)
    return d


def parse(pkt):
    """IP/TCP fields of an Ethernet frame, or None if it is not IP+TCP.
    A FastLane notification (an ICMP error) gives the fields of the TCP
    header it quotes, with nf set, its own addresses, DSCP, ECN and header
    checksum, and the quoted addresses as qsrc and qdst; caplen is then
    the quote's length."""
    et = struct.unpack("!H", pkt[12:14])[0]
    if et not in (0x0800, 0x86dd):
        return None
    v6, ip = et == 0x86dd, pkt[14:]
    macs = dict(dmac=pkt[0:6], smac=pkt[6:12])
    nf = fastlane_quote_of(ip, v6)
    if nf is None:
        return parse_ip(v6, ip, **macs)
    ihl, quote = nf
    if v6:
        ph = ip[8:40] + struct.pack("!I3xB", len(ip) - 40, 58)
        icmp_ok = inet_csum(ph + ip[40:]) == 0
        tc_ = (struct.unpack("!I", ip[0:4])[0] >> 20) & 0xff
        outer_fields = dict(src=socket.inet_ntop(socket.AF_INET6, ip[8:24]),
                            dst=socket.inet_ntop(socket.AF_INET6, ip[24:40]),
                            dscp=tc_ >> 2, ecn=tc_ & 3, hdr_ok=True)
    else:
        icmp_ok = inet_csum(ip[ihl:]) == 0
        outer_fields = dict(src=socket.inet_ntoa(ip[12:16]), dst=socket.inet_ntoa(ip[16:20]),
                            dscp=ip[1] >> 2, ecn=ip[1] & 3, hdr_ok=inet_csum(ip[:ihl]) == 0)
    q = parse_ip(v6, quote, **macs)
    if q is None:
        return None
    q.update(qsrc=q["src"], qdst=q["dst"], qdscp=q["dscp"], nf=True, icmp_ok=icmp_ok, **outer_fields)
    return q


class Port:
    """h1 -- sw -- h2; the port sw:h2 (device "h2" in sw) is the FastLane
    port under test, shaped by HTB so that it queues and drops.  bridged:
    h1 and h2 are ports of one bridge; "into": sw routes from h1 into a
    bridge br0 whose port h2 is (a host's uplink routed to the bridge of
    its containers)."""

    def __init__(self, lab, bridged=False, rate=SLOW, fl=f"limit 6000 rate {SLOW}"):
        self.lab = lab
        self.sw = self.lab.sw
        if bridged == "into":
            sh("ip addr flush dev h2; ip link add br0 type bridge; ip link set h2 master br0;"
               " ip link set br0 up; ip addr add 10.0.2.254/24 dev br0;"
               " ip addr add fd00:2::fe/64 dev br0 nodad", ns=self.sw)
        if bridged is True:
            # the two ports in one bridge: h1 and h2 on one subnet
            sh("ip addr flush dev h1; ip addr flush dev h2; ip link add br0 type bridge;"
               " ip link set h1 master br0; ip link set h2 master br0; ip link set br0 up", ns=self.sw)
            sh("ip addr flush dev eth0; ip addr add 10.0.9.2/24 dev eth0;"
               " ip addr add fd00:9::2/64 dev eth0 nodad", ns=self.lab.ns("h2"))
            sh("ip addr add 10.0.9.1/24 dev eth0; ip addr add fd00:9::1/64 dev eth0 nodad",
               ns=self.lab.ns("h1"))
            self.addrs = {False: ("10.0.9.1", "10.0.9.2"), True: ("fd00:9::1", "fd00:9::2")}
            self.next_hop_mac = mac(self.lab.ns("h2"), "eth0")
        else:
            self.addrs = {False: (self.lab.ip("h1"), self.lab.ip("h2")),
                          True: (self.lab.ip("h1", True), self.lab.ip("h2", True))}
            self.next_hop_mac = mac(self.sw, "h1")
        self.h1_mac = mac(self.lab.ns("h1"), "eth0")
        # the router must know h1 and h2 before the burst
        for v6 in (False, True):
            sh(f"ping -c1 -W5 {'-6 ' if v6 else ''}{self.addrs[v6][1]} >/dev/null", ns=self.lab.ns("h1"))
        if bridged is not True:
            # ... and keep knowing them: the port under test is slow and
            # often full, so the router's ARP / ND probes towards h2 wait
            # behind 64 KB at 100 kbit/s (5 s) and its entry fails.  A
            # burst then meets an unresolved neighbour, whose queue holds
            # unres_qlen_bytes (about 90 of these frames' truesize) and
            # drops the rest before they reach the port: 93 of 260 frames
            # reached it when test_pending_hand_off_holds_a_burst failed.
            for h in ("h1", "h2"):
                hm = ":".join(f"{x:02x}" for x in mac(self.lab.ns(h), "eth0"))
                dev = "br0" if bridged and h == "h2" else h
                sh(f"ip neigh replace {self.lab.ip(h)} lladdr {hm} dev {dev} nud permanent;"
                   f" ip -6 neigh replace {self.lab.ip(h, True)} lladdr {hm} dev {dev} nud permanent",
                   ns=self.sw)
        self.reset(rate, fl)

    def reset(self, rate=SLOW, fl=f"limit 6000 rate {SLOW}"):
        """a fresh port (counters at zero): HTB at rate over fastlane fl"""
        tc("qdisc del dev h2 root", self.sw, check=False)
        tc("qdisc add dev h2 root handle 1: htb default 1", self.sw)
        tc(f"class add dev h2 parent 1: classid 1:1 htb rate {rate} ceil {rate}", self.sw)
        tc(f"qdisc add dev h2 parent 1:1 handle 10: fastlane {fl}", self.sw)
        return self

    def resize(self, fl):
        """change the FastLane qdisc in place (tc qdisc change): a reset
        would destroy the notifications it holds and those waiting for its
        work item, and the drops they report would be left to the RTO"""
        tc(f"qdisc change dev h2 parent 1:1 handle 10: fastlane {fl}", self.sw)
        return self

    def stats(self):
        for q in json.loads(tc("-s -j qdisc show dev h2", self.sw)):
            if q["kind"] == "fastlane":
                return q
        raise AssertionError("no fastlane qdisc")

    def burst(self, v6, seqs, proto=6, tos=0, payload=PAYLOAD, sport=40000, dport=5001, sndbuf=0):
        """send one frame per sequence number from h1 to h2 at once
        (sndbuf: the socket's send buffer, for frames a qdisc holds)"""
        src, dst = self.addrs[v6]
        frames = [frame(v6, self.h1_mac, self.next_hop_mac, src, dst,
                        tcp_segment(sport, dport, s, b"\x5a" * payload), proto=proto, tos=tos)
                  for s in seqs]
        with netns(self.lab.ns("h1")):
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            if sndbuf:
                s.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, sndbuf)
            s.bind(("eth0", 0))
            for f in frames:
                s.send(f)
            s.close()
        return len(frames[0]) - 14

    def nf_burst(self, v6, count):
        """send count FastLane notifications from elsewhere (ICMP errors
        of FastLane's type with the codepoint, quoting a segment with
        TCP_OPTS) from h1 to h2 at once"""
        src, dst = self.addrs[v6]
        seg = frame(v6, self.h1_mac, self.next_hop_mac, dst, src, tcp_segment(5001, 40000, 1, b""))[14:]
        err = fastlane_error(v6, src, dst, seg)
        fr = self.next_hop_mac + self.h1_mac + (b"\x86\xdd" if v6 else b"\x08\x00") + err
        with netns(self.lab.ns("h1")):
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            s.bind(("eth0", 0))
            for _ in range(count):
                s.send(fr)
            s.close()
        return len(fr)

    def capture(self, seconds, stop=None):
        """what h1's eth0 receives for a while (or until stop is set):
        start it, then send"""
        return sniff(self.lab.ns("h1"), "eth0", seconds, stop)

    def notified(self, seconds=NOTIFY_WAIT_S):
        """capture h1's eth0 until every notification the port generated
        has arrived: on a loaded host the debug guest delivers them
        seconds after the burst, past any fixed window.  Returns
        (done, thread, frames); after the burst, wait_notified(done)."""
        done = threading.Event()
        t, got = self.capture(seconds, stop=done)
        return done, t, got

    def wait_notified(self, done, t, got):
        """the end of notified(): every generated notification at h1 (a
        WaitTimeout names the shortfall), one more second for any extra
        one, then the capture stops"""
        try:
            wait_until(lambda: (lambda st: st if len(notifications(got)) >= st["nf_generated"] else None)(
                self.stats()), NOTIFY_WAIT_S, "every notification the port generated reached h1",
                interval=0.2)
            time.sleep(1)
        finally:
            done.set()
            t.join()


def notifications(frames):
    """the notifications among frames received, as sniff() returns them"""
    return [p for _, out, raw in frames if not out for p in [parse(raw)] if p and p["nf"]]


@pytest.fixture(scope="module")
def routed():
    """h1 -- router -- h2, the router's port towards h2 a FastLane port;
    shared by the tests of this module (each resets the port)"""
    from dcnet.testbed.netlab import Lab
    lab = Lab(["h1", "h2"], prefix="fr")
    try:
        yield Port(lab)
    finally:
        lab.close()


def test_configuration_round_trip_and_errors(routed):
    lab = routed.lab
    tc("qdisc del dev h2 root", lab.sw, check=False)
    tc("qdisc add dev h2 root fastlane limit 64kb rate 10mbit", lab.sw)
    q = json.loads(tc("-j qdisc show dev h2", lab.sw))[0]
    opts = q["options"]
    # 2.5% of the buffer, 1% of the rate, the default codepoint
    assert (opts["limit"], opts["nf_limit"], opts["rate"], opts["nf_rate"], opts["dscp"]) == \
        (65536, 1638, 1250000, 12500, DSCP), opts
    tc("qdisc change dev h2 root fastlane nf_limit 2000 nf_rate 0 dscp 20", lab.sw)
    opts = json.loads(tc("-j qdisc show dev h2", lab.sw))[0]["options"]
    assert (opts["limit"], opts["nf_limit"], opts["nf_rate"], opts["dscp"]) == (65536, 2000, 0, 20), opts
    assert "nf_limit 2000b" in tc("qdisc show dev h2", lab.sw)
    # refused by the kernel, with its reason
    assert "nf_limit larger than the port's buffer" in tc_fails("qdisc change dev h2 root fastlane nf_limit 100kb",
                                                                lab.sw)
    assert "nf_rate larger than the port's rate" in tc_fails("qdisc change dev h2 root fastlane nf_rate 20mbit",
                                                             lab.sw)
    # ... and by tc
    assert "dscp" in tc_fails("qdisc change dev h2 root fastlane dscp 64", lab.sw)
    # what was refused changed nothing
    opts = json.loads(tc("-j qdisc show dev h2", lab.sw))[0]["options"]
    assert (opts["limit"], opts["nf_limit"], opts["dscp"]) == (65536, 2000, 20)
    # an unpatched tc still lists the qdisc
    system_tc = "/usr/sbin/tc" if os.path.exists("/usr/sbin/tc") else "/sbin/tc"
    assert "fastlane" in sh(f"{system_tc} qdisc show dev h2", ns=lab.sw)
    assert "ce_threshold" not in tc("qdisc show dev h2", lab.sw)
    tc("qdisc change dev h2 root fastlane ce_threshold 30kb", lab.sw)
    assert json.loads(tc("-j qdisc show dev h2", lab.sw))[0]["options"]["ce_threshold"] == 30720
    assert "ce_threshold not below" in tc_fails("qdisc change dev h2 root fastlane ce_threshold 64kb", lab.sw)
    # the host side's knobs: off by default, bounded
    h1 = lab.ns("h1")
    assert sh("sysctl -n net.ipv4.tcp_fastlane", ns=h1).strip() == "0"
    assert sh("sysctl -n net.ipv4.tcp_fastlane_dscp", ns=h1).strip() == str(DSCP)
    for bad in ("net.ipv4.tcp_fastlane_dscp=64", "net.ipv4.tcp_fastlane_dscp=0", "net.ipv4.tcp_fastlane=2"):
        assert subprocess.run(ns_exec(h1) + ["sysctl", "-qw", bad],
                              capture_output=True).returncode != 0, bad


@pytest.mark.parametrize("v6,bridged", [(False, False), (True, False), (False, True),
                                        (False, "into"), (True, "into")],
                         ids=["ipv4-routed", "ipv6-routed", "ipv4-bridged",
                              "ipv4-routed-into-bridge", "ipv6-routed-into-bridge"])
def test_each_drop_yields_one_notification(routed, lab_factory, v6, bridged):
    """A notification per drop, back to the sender: out of the port the
    packet came in on when it was bridged to the FastLane port, and routed
    when it was routed there, a bridge port or not (a packet routed into
    a bridge used to be sent back out of the router's uplink, addressed
    to the bridge's own MAC, and was lost)."""
    port = Port(lab_factory(["h1", "h2"], prefix="fb"), bridged=bridged) if bridged else routed.reset()
    seqs = [1000 + i * PAYLOAD for i in range(40)]
    cap = port.notified()
    # all at once: written one by one, the frames took longer than the
    # port needs to send one (84 ms at 100 kbit/s) on a loaded host, and
    # 21 of 40 got through (2026-11-28, two VMs and a build on 2 cores)
    iplen = batched_burst(port, seqs, v6)
    port.wait_notified(*cap)
    got = cap[2]
    st = port.stats()
    nfs = notifications(got)
    src, dst = port.addrs[v6]
    dropped = st["drops"]
    print(f"{len(seqs)} sent, {dropped} dropped, {len(nfs)} notifications at h1, stats {st}")
    # 6000 bytes hold 5 of these packets (and one is on the wire)
    assert 20 <= dropped <= len(seqs) - 4, st
    assert st["nf_generated"] == dropped and st["nf_not_tcp"] == 0
    assert len(nfs) == dropped, "not exactly one notification per drop"
    # each notification names a packet of the burst, each packet at most
    # once, none of those that fit in the buffer at its start
    got_seqs = sorted(n["seq"] for n in nfs)
    assert len(set(got_seqs)) == len(got_seqs) and set(got_seqs) <= set(seqs), got_seqs
    assert got_seqs[0] >= seqs[4], got_seqs
    for n in nfs:
        # an ICMP error to the sender, quoting the packet's headers as sent
        assert n["dst"] == src
        assert (n["qsrc"], n["qdst"]) == (src, dst)
        assert (n["sport"], n["dport"]) == (40000, 5001)
        assert n["iplen"] == iplen, "the quoted IP length is the packet's"
        assert n["caplen"] == (40 if v6 else 20) + 20 + len(TCP_OPTS), "the quote ends after the options"
        assert n["opts"] == TCP_OPTS
        assert n["hdr_ok"], "IPv4 header checksum"
        assert n["icmp_ok"], "ICMP checksum"
        assert (n["dscp"], n["ecn"]) == (DSCP, 0)
        if bridged is True:
            # from the address the packet was sent to
            assert n["src"] == dst
        else:
            # from the router's address on the route back
            assert n["src"] == (port.lab.ip("h1", v6).rsplit("." if not v6 else ":", 1)[0] +
                                (".254" if not v6 else ":fe")), n["src"]
        if bridged is True:
            # back out of the port it came in on, Ethernet addresses swapped
            assert (n["dmac"], n["smac"]) == (port.h1_mac, port.next_hop_mac)
        elif bridged:
            # routed to h1: from the router's port towards it
            assert (n["dmac"], n["smac"]) == (port.h1_mac, mac(port.sw, "h1"))
    assert st["nf_cap_drops"] == 0


def test_not_tcp_is_dropped_without_notification(routed):
    port = routed.reset()
    t, got = port.capture(4)
    port.burst(False, range(40), proto=17)
    t.join()
    st = port.stats()
    assert st["drops"] >= 20
    assert st["nf_generated"] == 0 and st["nf_not_tcp"] == st["drops"]
    assert notifications(got) == [] and notifications([]) == []


def test_no_drop_no_notification(routed):
    """below the buffer the port is a FIFO: every packet through"""
    port = routed.reset(rate="100mbit", fl="limit 128kb rate 100mbit")
    port.burst(False, range(0, 40 * PAYLOAD, PAYLOAD))
    st = wait_until(lambda: (lambda q: q if q["packets"] + q["drops"] >= 40 else None)(port.stats()), 10,
                    "the port sent or dropped the 40 frames", interval=0.05)
    assert st["drops"] == 0 and st["nf_generated"] == 0
    assert st["packets"] >= 40


def test_caps_hold_under_a_notification_storm(routed):
    """notifications from elsewhere flood a port whose data queue never
    empties: they use at most nf_rate (plus the bucket), the notification
    queue never exceeds nf_limit, the excess is dropped and counted"""
    # 100 kbit/s port: nf_rate 125 B/s, nf_limit 2.5% of 64 KB = 1638 B;
    # 64 KB of data take 5 s to drain, so data waits through the storm
    port = routed.reset(rate=SLOW, fl=f"limit 64kb rate {SLOW}")
    t0 = time.time()
    # keep data queued for the whole storm (each round refills it)
    for k in range(8):
        port.burst(False, range(k * 100000, k * 100000 + 50 * PAYLOAD, PAYLOAD), sport=41000)
        port.nf_burst(False, 300)
        time.sleep(0.25)
    st = port.stats()
    elapsed = time.time() - t0          # up to when the counters were read
    print(f"storm over {elapsed:.1f} s: {st}")
    assert st["nf_queued"] > 0 and st["nf_cap_drops"] > 1000
    assert st["nf_backlog_max"] <= 1638
    # within the rate cap while data waited, and idle sends only with the
    # data queue empty: at most rate * time + the bucket, generously
    capped = st["nf_bytes"] - st["nf_sent_idle"] * NF_FRAME
    assert capped <= 125 * elapsed + 1638 + NF_FRAME * 4, st
    assert st["drops"] >= st["nf_cap_drops"]


def test_smaller_buffer_drops_the_excess_at_once(routed):
    """tc qdisc change to a smaller limit or nf_limit: what the new buffers
    no longer hold is dropped at once, oldest first, as fq_codel and fq
    do: counted in drops, each data packet notified like any other drop
    of the port, each notification a cap drop, and taken off the queue
    length and backlog of the HTB class above (qdisc_tree_reduce_backlog).
    Before, the excess stayed queued beyond the new limit until it
    drained."""
    rate = "1kbit"                  # a 1066-byte frame every 8.5 s
    # nf_limit 100: a token bucket of 256 bytes once a notification has
    # been sent (the bucket starts full at the default 3276), so that few
    # of the notifications below go at once; at 1 byte/s the rest wait
    port = routed.reset(rate=rate, fl=f"limit 64kb nf_limit 100 nf_rate 8bit rate {rate}")
    port.burst(False, [1000 + i * PAYLOAD for i in range(40)])
    port.nf_burst(False, 3)
    wait_until(lambda: port.stats()["nf_sent"] > 0, 20, "a notification left", interval=0.2)
    port.resize(f"limit 64kb nf_limit 2000 nf_rate 8bit rate {rate}")
    port.nf_burst(False, 20)
    st0 = port.stats()
    port.resize(f"limit 6000 nf_limit 200 nf_rate 8bit rate {rate}")
    st1 = port.stats()
    print(f"before {st0}\nafter {st1}")
    assert st0["backlog"] > 10000 and st0["nf_backlog"] > 400, st0
    assert st1["backlog"] <= 6000 and st1["nf_backlog"] <= 200, st1
    sent = st1["packets"] - st0["packets"]
    dropped = st1["drops"] - st0["drops"]
    cap = st1["nf_cap_drops"] - st0["nf_cap_drops"]
    # every packet that left the queue was sent or dropped
    assert st0["qlen"] - st1["qlen"] == sent + dropped, (st0, st1)
    assert cap >= 3 and dropped - cap >= 5, (st0, st1)
    # the data dropped was notified, as any drop of the port
    assert st1["nf_generated"] - st0["nf_generated"] == dropped - cap, (st0, st1)

    def tree():
        qs = {q["kind"]: q for q in json.loads(tc("-s -j qdisc show dev h2", port.sw))}
        return qs if qs["htb"]["qlen"] == qs["fastlane"]["qlen"] else None
    qs = wait_until(tree, 10, "HTB's queue length is its child's", interval=0.2)
    assert qs["htb"]["backlog"] == qs["fastlane"]["backlog"], qs


SLOT_S = 3


def batched_burst(port, seqs, v6=False):
    """Port.burst, but the frames reach the router all at once: netem's
    slots on h1's eth0 hold them until the slot opens and then release them
    together (one softirq run forwards many), so that the port drops many
    before its BH work sends any of their notifications"""
    h1 = port.lab.ns("h1")
    tc(f"qdisc add dev eth0 root netem slot {SLOT_S}s {SLOT_S}s limit 10000", h1)
    try:
        t0 = time.time()
        # the frames netem holds count against the socket's send buffer:
        # with the default one, the writer blocked until a slot opened
        # (260 frames took 2 and 2 slots: 4.9 s at 2 s, 24.5 s at 12 s)
        iplen = port.burst(v6, seqs, sndbuf=64 << 20)
        sent_in = time.time() - t0
        # the slot opens SLOT_S after the first frame: the burst must be
        # in by then
        assert sent_in < SLOT_S - 0.5, f"the burst took {sent_in:.1f} s to write"
        # the slot opens and netem lets them all go: then its deletion
        # (below) loses none
        wait_until(lambda: qdisc_qlen(h1, "eth0", "netem") == 0, SLOT_S + 10,
                   "netem's slot released the burst", interval=0.1)
    finally:
        tc("qdisc del dev eth0 root", h1, check=False)
    return iplen


def test_pending_hand_off_holds_a_burst(routed):
    """Issue 20 (incast RTOs): the notifications a port builds wait for its
    BH work to send them.  That hand-off held at most 64, and dropped the
    rest: a drop nobody was told of, which only the sender's RTO repairs.
    It is now bounded by the port's buffer in bytes only: a burst of drops
    with far more than 64 notifications waiting at once is notified
    entirely, with no buffer-cap or hand-off drops"""
    # 64 KB hold ~60 of these frames: the rest of 260 is dropped
    port = routed.reset(rate=SLOW, fl=f"limit 64kb rate {SLOW}")
    seqs = [1000 + i * PAYLOAD for i in range(260)]
    cap = port.notified()
    batched_burst(port, seqs)
    port.wait_notified(*cap)
    got = cap[2]
    st = port.stats()
    nfs = notifications(got)
    print(f"{len(seqs)} sent, {st['drops']} dropped, {len(nfs)} notifications at h1, stats {st}")
    assert st["drops"] >= 150, st
    # more waited at once than the old limit let through
    assert st["nf_pending_max"] > 64, st
    assert st["nf_pending_drops"] == 0 and st["nf_cap_drops"] == 0, st
    assert st["nf_generated"] == st["drops"], st
    assert len(nfs) == st["drops"], "not every drop was notified"
    assert st["nf_pending"] == 0, "notifications left behind"


def test_pending_hand_off_bounded_by_the_buffer(routed):
    """... and at a port of 2600 bytes (50 notifications of 52 bytes) the
    same burst fills the hand-off: what does not fit is dropped and counted
    in nf_pending_drops, apart from the paper's 2.5% buffer cap
    (nf_cap_drops); everything handed off is sent"""
    port = routed.reset(rate=SLOW, fl=f"limit 2600 rate {SLOW}")
    seqs = [1000 + i * PAYLOAD for i in range(260)]
    cap = port.notified()
    iplen = batched_burst(port, seqs)
    port.wait_notified(*cap)
    got = cap[2]
    st = port.stats()
    nfs = notifications(got)
    print(f"{len(seqs)} sent, {st['drops']} dropped, {len(nfs)} notifications at h1, stats {st}")
    nf_len = 20 + 20 + len(TCP_OPTS)
    assert iplen > 2600 // 3
    assert st["nf_pending_drops"] > 0, st
    assert st["nf_pending_max"] <= 2600 // nf_len, st
    assert st["nf_cap_drops"] == 0, st
    assert st["nf_generated"] + st["nf_pending_drops"] == st["drops"], st
    assert len(nfs) == st["nf_generated"], "a notification handed off was not sent"


# ------------------------------------------------------------ the host side

def nstat(ns):
    """TcpExt and IpExt/Ip counters of namespace ns"""
    out = {}
    for path in ("/proc/net/netstat", "/proc/net/snmp"):
        lines = sh(f"cat {path}", ns=ns).splitlines()
        for names, values in zip(lines[::2], lines[1::2]):
            pfx = names.split(":")[0]
            for k, v in zip(names.split()[1:], values.split()[1:]):
                out[f"{pfx}{k}"] = int(v)
    return out


def delta(a, b, keys):
    return {k: b.get(k, 0) - a.get(k, 0) for k in keys}


def wait_nstat(ns, n0, keys, at_least, what, timeout=10):
    """wait until the counters keys of namespace ns have together moved by
    at_least since n0 (an nstat()); returns the nstat() that showed it"""
    def moved():
        n = nstat(ns)
        got = sum(delta(n0, n, keys).values())
        return n if got >= at_least else None
    return wait_until(moved, timeout, f"{what} ({'+'.join(keys)} moved by {at_least})", interval=0.05)


def qdisc_qlen(ns, dev, kind):
    """packets the qdisc of kind on dev in ns holds"""
    return sum(q.get("qlen", 0) for q in json.loads(tc(f"-s -j qdisc show dev {dev}", ns))
               if q["kind"] == kind)


FL_KEYS = ["TcpExtTCPFastLaneNotify", "TcpExtTCPFastLaneRetrans", "TcpExtTCPFastLaneCtlResend",
           "TcpExtTCPFastLaneNoSocket", "TcpExtTCPFastLaneBadSeq", "TcpExtTCPFastLaneStale",
           "TcpExtTCPFastLaneRateLimited", "TcpExtTCPFastLaneLockDropped",
           "TcpExtTCPFastLaneRefused", "TcpExtTCPFastLaneBadOpts", "TcpExtTCPFastLaneStaleTS",
           "TcpExtTCPFastLaneOutOfWindow"]
# what a host does with a notification: each one lands in exactly one
VERDICT_KEYS = ["TcpExtTCPFastLaneNotify", "TcpExtTCPFastLaneNoSocket", "TcpExtTCPFastLaneBadSeq",
                "TcpExtTCPFastLaneStale", "TcpExtTCPFastLaneRateLimited", "TcpExtTCPFastLaneLockDropped",
                "TcpExtTCPFastLaneRefused", "TcpExtTCPFastLaneBadOpts", "TcpExtTCPFastLaneStaleTS",
                "TcpExtTCPFastLaneOutOfWindow"]


TCP_MD5SIG = 14


def md5sig(peer, v6, key):
    """struct tcp_md5sig: a TCP-MD5 key for the peer address"""
    if v6:
        sa = struct.pack("=H", socket.AF_INET6) + struct.pack("!HI", 0, 0) + \
            socket.inet_pton(socket.AF_INET6, peer) + struct.pack("=I", 0)
    else:
        sa = struct.pack("=H", socket.AF_INET) + struct.pack("!H", 0) + socket.inet_aton(peer)
    return sa.ljust(128, b"\0") + struct.pack("=BBHi", 0, 0, len(key), 0) + key.ljust(80, b"\0")


class Conn:
    """a TCP connection h1 -> h2 (python sockets in the namespaces); the
    sender side is self.c"""

    def __init__(self, lab, v6, port=7000, md5=None):
        fam = socket.AF_INET6 if v6 else socket.AF_INET
        dst = lab.ip("h2", v6)
        with netns(lab.ns("h2")):
            self.ls = socket.socket(fam, socket.SOCK_STREAM)
            self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if md5:
                self.ls.setsockopt(socket.IPPROTO_TCP, TCP_MD5SIG, md5sig(lab.ip("h1", v6), v6, md5))
            self.ls.bind((dst, port))
            self.ls.listen(4)
        self.received = 0
        self.accepted = threading.Event()
        self.t = threading.Thread(target=self._serve, daemon=True)
        self.t.start()
        with netns(lab.ns("h1")):
            self.c = socket.socket(fam, socket.SOCK_STREAM)
        if md5:
            self.c.setsockopt(socket.IPPROTO_TCP, TCP_MD5SIG, md5sig(dst, v6, md5))
        self.c.settimeout(60)
        self.c.connect((dst, port))
        self.sport = self.c.getsockname()[1]
        self.port = port

    def _serve(self):
        try:
            s, _ = self.ls.accept()
            self.accepted.set()
            while True:
                b = s.recv(65536)
                if not b:
                    break
                self.received += len(b)
            s.close()
        except OSError:         # reset, or the listener closed
            pass

    def close(self, wait=True):
        """wait: for the receiver to read everything; else reset"""
        if not wait:
            self.c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.c.close()
        if wait:
            self.t.join(60)
        self.ls.close()


SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def rx_time(anc):
    """the receive time (seconds, CLOCK_REALTIME, as time.time()) in
    recvmsg()'s ancillary data"""
    for level, typ, data in anc:
        if level == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS and len(data) >= 16:
            sec, nsec = struct.unpack("qq", data[:16])
            return sec + nsec / 1e9
    return time.time()


def sniff(ns, dev, seconds, stop=None):
    """every frame dev in ns sends or receives for a while (or until stop
    is set), with the time and the direction (True: outgoing).  The
    socket is bound when this returns: every frame from then on is caught
    (its 64 MB buffer holds them until the thread reads), so a caller
    sends at once, with no pause for the thread to start."""
    with netns(ns):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        # a flight of full-size frames overflows the default buffer
        # while python reads one frame at a time: lost frames would read
        # as missing notifications
        s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
        # each frame's time is the kernel's, when the device saw it, not
        # when a starved Python thread got to read it
        s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        s.bind((dev, 0))
    s.settimeout(0.2)
    got = []

    def read():
        pkt, anc, _, addr = s.recvmsg(65535, 256)
        got.append((rx_time(anc), addr[2] == socket.PACKET_OUTGOING, pkt))

    def run():
        end = time.time() + seconds
        while time.time() < end and not (stop and stop.is_set()):
            try:
                read()
            except socket.timeout:
                continue
        # what arrived in the window but is not read yet (a slow guest)
        s.setblocking(False)
        while True:
            try:
                read()
            except OSError:
                break
        s.close()
    t = threading.Thread(target=run)
    t.start()
    return t, got


def tcp_payload_len(p):
    return p["iplen"] - (40 if p["v6"] else 20) - 20 - len(p["opts"])


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_drops_are_notified_and_exactly_those_bytes_resent(routed, v6):
    """a real flow through a FastLane port with a small buffer: every drop
    reaches the sender as one notification, and the sender resends exactly
    the notified bytes, soon after"""
    # slower than the debug guest's sender manages (1.2-1.5 Mbit/s, and
    # below 500 kbit/s beside another guest on a slow host: no drop)
    port = routed.reset(rate="250kbit", fl="limit 8000 rate 250kbit")
    h1 = port.lab.ns("h1")
    sh("sysctl -qw net.ipv4.tcp_fastlane=1", ns=h1)
    before = nstat(h1)
    conn = Conn(port.lab, v6, port=7000 + v6)
    # a sender that loops in sendall() owns its socket lock much of the
    # time in the debug guest: notifications that find it owned wait in
    # the socket's backlog like any segment (issue 20, defect 5: a private
    # queue of 8 dropped the rest)
    done = threading.Event()
    t, got = sniff(h1, "eth0", 120, stop=done)
    data = b"x" * 150_000
    conn.c.sendall(data)
    conn.c.shutdown(socket.SHUT_WR)
    conn.close()            # the receiver has read everything
    wait_until(lambda: len(notifications(got)) >= port.stats()["nf_generated"], 10,
               "every notification the port generated reached h1", interval=0.1)
    done.set()
    t.join()
    after = nstat(h1)
    st = port.stats()
    d = delta(before, after, FL_KEYS + ["TcpExtTCPTimeouts"])
    pkts = [(ts, out, parse(p)) for ts, out, p in got]
    nfs = [(ts, p) for ts, out, p in pkts if p and not out and p["nf"]]
    sent = [(ts, p) for ts, out, p in pkts if p and out and p["dport"] == conn.port]
    print(f"drops {st['drops']}, notifications at h1 {len(nfs)}, counters {d}, received {conn.received}")
    assert conn.received == len(data)
    assert st["drops"] > 0, "the port never dropped: nothing tested"
    assert st["nf_generated"] == st["drops"] == len(nfs), "one notification per drop"
    # each notification counted once: every valid one is acted on (taken),
    # unless over the per-socket rate cap (2 * cwnd + 16 a round trip, by
    # design: 1 of 78 in the 2026-11-24 debug run); the others came late,
    # after their segment had been resent (stale) or acknowledged (below
    # snd_una: bad sequence).  None is lost for the lock (issue 20, defect
    # 5: 7 of 22 were, with a queue of 8) or for a missing option
    assert d["TcpExtTCPFastLaneNotify"] + d["TcpExtTCPFastLaneStale"] + d["TcpExtTCPFastLaneStaleTS"] + \
        d["TcpExtTCPFastLaneBadSeq"] + d["TcpExtTCPFastLaneOutOfWindow"] + \
        d["TcpExtTCPFastLaneRateLimited"] == len(nfs), d
    assert d["TcpExtTCPFastLaneLockDropped"] == 0 and d["TcpExtTCPFastLaneBadOpts"] == 0, d
    assert d["TcpExtTCPFastLaneNotify"] > 0, d
    assert d["TcpExtTCPFastLaneRetrans"] > 0, d
    # every notification taken was answered by a retransmission of exactly
    # its bytes, within a second (the debug guest is slow)
    answered = 0
    for ts, n in nfs:
        n_len = tcp_payload_len(n)
        resent = [(t2, p) for t2, p in sent if t2 >= ts and p["seq"] == n["seq"]]
        if resent:
            t2, p = resent[0]
            assert p["iplen"] - (40 if v6 else 20) - 20 - len(p["opts"]) == n_len
            if t2 - ts < 1.0:
                answered += 1
    assert answered >= d["TcpExtTCPFastLaneNotify"] * 0.9, (answered, d)


class Blocked:
    """established connections h1 -> h2 whose data the router throws away
    (netem loss 100% on its port towards h2), so that it stays in flight;
    h1's segments are captured at the router"""

    def __init__(self, lab):
        self.lab = lab
        self.h1 = self.lab.ns("h1")
        self.conn = None
        self.port = 7100
        sh("sysctl -qw net.ipv4.tcp_fastlane=1", ns=self.h1)
        # no retransmission timeout while a test looks (TLP still fires)
        sh("ip route add 10.0.2.0/24 via 10.0.1.254 rto_min 60s;"
           " ip -6 route add fd00:2::/64 via fd00:1::fe rto_min 60s", ns=self.h1)
        # cached addresses: reading them costs a process start, seconds in
        # the debug guest, and a notification must come while a capture
        # looks (and before the 1 s timer of a SYN)
        self.macs = {h: (mac(self.lab.ns(h), "eth0"), mac(self.lab.sw, h)) for h in ("h1", "h2")}
        # the router's neighbours stay resolved while netem drops every
        # frame towards a host: a failed ARP or ND would make it send
        # host unreachable, and that ends a connection in SYN_SENT
        for h, i in (("h1", 1), ("h2", 2)):
            hm = ":".join(f"{x:02x}" for x in self.macs[h][0])
            sh(f"ip neigh replace 10.0.{i}.1 lladdr {hm} dev {h} nud permanent;"
               f" ip -6 neigh replace fd00:{i}::1 lladdr {hm} dev {h} nud permanent", ns=self.lab.sw)
            # ... and so do the hosts' entries for the router: an entry
            # that was stale when h2 answered a handshake goes to probe 5 s
            # later, its probes' answers are dropped, and it fails; h2's
            # later ACKs and SACKs then never leave it
            sm = ":".join(f"{x:02x}" for x in self.macs[h][1])
            sh(f"ip neigh replace 10.0.{i}.254 lladdr {sm} dev eth0 nud permanent;"
               f" ip -6 neigh replace fd00:{i}::fe lladdr {sm} dev eth0 nud permanent", ns=self.lab.ns(h))

    def release(self):
        if self.conn:
            self.conn.close(wait=False)
            self.conn = None

    def connect(self, v6, md5=None):
        """a new connection, established before the path is blocked"""
        self.release()
        tc("qdisc del dev h2 root", self.lab.sw, check=False)
        self.v6 = v6
        self.port += 1
        self.conn = Conn(self.lab, v6, port=self.port, md5=md5)
        # h2 has the handshake's last ACK (the listener accepted): netem
        # must not eat it
        wait_until(self.conn.accepted.is_set, 10, f"h2 accepted the connection on :{self.port}")
        tc("qdisc add dev h2 root netem loss 100%", self.lab.sw)
        return self

    def send_and_capture(self, nbytes, seconds):
        t, got = sniff(self.lab.sw, "h1", seconds)
        self.conn.c.send(b"y" * nbytes)
        t.join()
        return [(ts, p, raw) for ts, out, raw in got for p in [parse(raw)]
                if p and not out and p["dport"] == self.conn.port and tcp_payload_len(p) > 0]

    def notify(self, raw, tsval=None, seq=None, sport=None, count=1, to="h1",
               strip=(), send=True, payload=None, ack=None, dscp=DSCP, itype=None):
        """send host to the notification a switch would make of frame raw:
        an ICMP error of FastLane's type from the router's address on the
        host's link, quoting raw's IP header and TCP header with options
        (with the options of kinds in strip left out: forged; payload: the
        length it stands for instead of raw's; itype: another ICMP type);
        send=False: only return the frame"""
        eth = 14
        ip = bytearray(raw[eth:])
        ihl = 40 if self.v6 else (ip[0] & 15) * 4
        doff = (ip[ihl + 12] >> 4) * 4
        ip = ip[:ihl + doff]
        if seq is not None:
            ip[ihl + 4:ihl + 8] = struct.pack("!I", seq)
        if sport is not None:
            ip[ihl:ihl + 2] = struct.pack("!H", sport)
        if ack is not None:
            ip[ihl + 8:ihl + 12] = struct.pack("!I", ack)
        if tsval is not None:
            o = bytes(ip[ihl + 20:ihl + doff])
            i = o.find(bytes([8, 10]))
            assert i >= 0, "no timestamp option"
            ip[ihl + 20 + i + 2:ihl + 20 + i + 6] = struct.pack("!I", tsval)
        if strip:
            o, kept, i = bytes(ip[ihl + 20:ihl + doff]), b"", 0
            while i < len(o):
                n = 1 if o[i] in (0, 1) else o[i + 1]
                if o[i] not in strip:
                    kept += o[i:i + n]
                i += n
            kept += b"\1" * (-len(kept) % 4)
            assert len(kept) < len(o), f"no option of kinds {strip}"
            shorter = doff - 20 - len(kept)
            ip = ip[:ihl + 20] + kept
            ip[ihl + 12] = ((20 + len(kept)) // 4) << 4 | (ip[ihl + 12] & 15)
            # the payload the notification stands for stays the same
            if self.v6:
                ip[4:6] = struct.pack("!H", struct.unpack("!H", ip[4:6])[0] - shorter)
            else:
                ip[2:4] = struct.pack("!H", struct.unpack("!H", ip[2:4])[0] - shorter)
        if payload is not None:
            hl = (ip[ihl + 12] >> 4) * 4
            if self.v6:
                ip[4:6] = struct.pack("!H", hl + payload)
            else:
                ip[2:4] = struct.pack("!H", ihl + hl + payload)
        if not self.v6:
            ip[10:12] = b"\0\0"
            ip[10:12] = struct.pack("!H", inet_csum(bytes(ip[:ihl])))
        i = 1 if to == "h1" else 2
        router = f"fd00:{i}::fe" if self.v6 else f"10.0.{i}.254"
        quoted_src = socket.inet_ntop(socket.AF_INET6, bytes(ip[8:24])) if self.v6 else \
            socket.inet_ntoa(bytes(ip[12:16]))
        err = fastlane_error(self.v6, router, quoted_src, ip, dscp=dscp, itype=itype)
        fr = b"".join(self.macs[to]) + raw[12:14] + err
        if send:
            self.send_frames([fr] * count, to)
        return fr

    def send_frames(self, frames, to="h1"):
        with netns(self.lab.sw):
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            s.bind((to, 0))
            for fr in frames:
                s.send(fr)
            s.close()

    def watch(self, seconds):
        return sniff(self.lab.sw, "h1", seconds)

    def close(self):
        self.release()
        tc("qdisc del dev h2 root", self.lab.sw, check=False)


@pytest.fixture(scope="module")
def blocked():
    from dcnet.testbed.netlab import Lab
    lab = Lab(["h1", "h2"], prefix="fk")
    b = Blocked(lab)
    try:
        yield b
    finally:
        b.close()
        lab.close()


def tsval_of(p):
    o = p["opts"]
    i = o.find(bytes([8, 10]))
    return struct.unpack("!I", o[i + 2:i + 6])[0]


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_spoofed_notifications_are_counted_and_dropped(blocked, v6):
    b = blocked.connect(v6)
    try:
        segs = b.send_and_capture(4 * 1448, 1.5)
        assert len(segs) >= 2, "no data in flight"
        ts0, p0, raw0 = segs[0]
        n0 = nstat(b.h1)
        # no socket: another source port
        b.notify(raw0, sport=p0["sport"] ^ 0x5555)
        # beyond snd_nxt: data never sent must never be sent (RFC 5927)
        b.notify(raw0, seq=(p0["seq"] + 10_000_000) & 0xffffffff)
        # before snd_una
        b.notify(raw0, seq=(p0["seq"] - 100_000) & 0xffffffff)
        # timestamps this segment was never sent with: stale by TSval
        b.notify(raw0, tsval=(tsval_of(p0) - 12345) & 0xffffffff)
        b.notify(raw0, tsval=(tsval_of(p0) + 1) & 0xffffffff)
        # the timestamp that would show it stale left out
        b.notify(raw0, strip={8})
        # not the FastLane codepoint: no FastLane port sent it
        b.notify(raw0, dscp=DSCP + 1)
        # the segments carry what stock sends: NOP NOP TS, nothing more
        assert p0["opts"][:4] == bytes([1, 1, 8, 10]) and len(p0["opts"]) == 12, p0["opts"]
        n1 = wait_nstat(b.h1, n0, VERDICT_KEYS, 7, "h1 judged the 7 spoofed notifications")
        d = delta(n0, n1, FL_KEYS)
        print(f"spoofed: {d}")
        assert d["TcpExtTCPFastLaneNotify"] == 0 and d["TcpExtTCPFastLaneRetrans"] == 0
        assert d["TcpExtTCPFastLaneNoSocket"] == 1
        assert d["TcpExtTCPFastLaneOutOfWindow"] == 2
        assert d["TcpExtTCPFastLaneStaleTS"] == 2
        assert d["TcpExtTCPFastLaneBadOpts"] == 1
        assert d["TcpExtTCPFastLaneRefused"] == 1
        assert d["TcpExtTCPFastLaneBadSeq"] == d["TcpExtTCPFastLaneStale"] == 0, d
        # a flood: bounded per round trip, counted, the kernel unharmed
        t, got = b.watch(3)
        b.notify(raw0, seq=(p0["seq"] + 10_000_000) & 0xffffffff, count=2000)
        t.join()
        d = delta(n1, wait_nstat(b.h1, n1, VERDICT_KEYS, 2000, "h1 judged the flood"), FL_KEYS)
        print(f"flood: {d}")
        # each counted once, as out of window: the rate limit counts only
        # notifications that pass every other check
        assert d["TcpExtTCPFastLaneOutOfWindow"] == 2000 and d["TcpExtTCPFastLaneRateLimited"] == 0, d
        assert d["TcpExtTCPFastLaneNotify"] == d["TcpExtTCPFastLaneRetrans"] == 0
        beyond = [p for _, out, raw in got for p in [parse(raw)]
                  if p and not out and p["dport"] == b.conn.port and
                  ((p["seq"] - p0["seq"]) & 0xffffffff) >= 4 * 1448 and tcp_payload_len(p) > 0]
        assert beyond == [], "data beyond snd_nxt was sent"
    finally:
        b.release()


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_pure_ack_notifications_need_the_connections_options(blocked, v6):
    """A notification for a pure ACK (no payload, within [snd_una,
    snd_nxt]) has no transmission to be matched against: it needs a quoted
    timestamp from the connection's last second before it may use the rate
    budget."""
    b = blocked.connect(v6)
    try:
        segs = b.send_and_capture(4 * 1448, 1.5)
        assert len(segs) >= 2, "no data in flight"
        _, p0, raw0 = segs[0]
        n0 = nstat(b.h1)
        b.notify(raw0, payload=0, strip={8}, count=50)
        # a timestamp from an hour before, one from the future
        b.notify(raw0, payload=0, tsval=(tsval_of(p0) - 3_600_000) & 0xffffffff)
        b.notify(raw0, payload=0, tsval=(tsval_of(p0) + 3_600_000) & 0xffffffff)
        n1 = wait_nstat(b.h1, n0, VERDICT_KEYS, 52, "h1 judged the 52 forged ACK notifications")
        d = delta(n0, n1, FL_KEYS)
        print(f"forged ACK notifications: {d}")
        assert d["TcpExtTCPFastLaneBadOpts"] == 50, d
        assert d["TcpExtTCPFastLaneStaleTS"] == 2, d
        assert d["TcpExtTCPFastLaneNotify"] == 0 and d["TcpExtTCPFastLaneCtlResend"] == 0, d
        assert d["TcpExtTCPFastLaneRateLimited"] == 0, d
        # with the connection's options and a timestamp of its last second
        # (a segment sent just now): the ACK again
        fresh = b.send_and_capture(1448, 0.3)
        assert fresh, "no new segment"
        b.notify(latest(fresh)[-1][2], payload=0)
        d = delta(n1, wait_nstat(b.h1, n1, VERDICT_KEYS, 1, "h1 judged the ACK notification"),
                  FL_KEYS)
        assert d["TcpExtTCPFastLaneNotify"] == 1 and d["TcpExtTCPFastLaneCtlResend"] == 1, d
    finally:
        b.release()


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_valid_notification_resends_those_bytes_at_once(blocked, v6):
    """a notification made of a segment in flight, with its timestamp:
    taken, and exactly that segment is resent before any timeout; the same
    notification again, after the retransmission, is stale"""
    b = blocked.connect(v6)
    try:
        segs = b.send_and_capture(4 * 1448, 1.5)
        assert len(segs) >= 2
        ts0, p1, raw1 = segs[1]          # not the lowest: still resent
        n0 = nstat(b.h1)
        t, got = b.watch(1.5)
        t_nf = time.time()
        b.notify(raw1)
        t.join()
        d = delta(n0, wait_nstat(b.h1, n0, VERDICT_KEYS, 1, "h1 judged the notification"),
                  FL_KEYS + ["TcpExtTCPTimeouts"])
        resent = [(ts, p) for ts, out, raw in got for p in [parse(raw)]
                  if p and not out and p["dport"] == b.conn.port and p["seq"] == p1["seq"]
                  and tcp_payload_len(p) > 0 and ts >= t_nf]
        print(f"valid: {d}, resent {[(round(ts - t_nf, 3), tcp_payload_len(p)) for ts, p in resent]}")
        assert d["TcpExtTCPFastLaneNotify"] == 1 and d["TcpExtTCPFastLaneRetrans"] == 1
        assert resent, "the notified segment was not resent"
        assert tcp_payload_len(resent[0][1]) == tcp_payload_len(p1)
        # the old notification again: its timestamp is no longer the
        # segment's (it was resent since), so it is stale by TSval
        n1 = nstat(b.h1)
        b.notify(raw1)
        d = delta(n1, wait_nstat(b.h1, n1, VERDICT_KEYS, 1, "h1 judged the old notification again"), FL_KEYS)
        assert d["TcpExtTCPFastLaneStaleTS"] == 1 and d["TcpExtTCPFastLaneNotify"] == 0, d
    finally:
        b.release()


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_notification_with_a_foreign_ack_is_refused(blocked, v6):
    """A notification quotes its segment's ACK field: h1's rcv_nxt when
    it sent it, so within [rcv_nxt - window, rcv_nxt] now.  One whose ACK
    lies beyond rcv_nxt (data h2 never sent) or far below it is forged:
    refused and counted as out of window (TCPFastLaneBadSeq), whatever
    its sequence and timestamp say.  The same notification with the ACK
    as sent is taken."""
    b = blocked.connect(v6)
    try:
        segs = b.send_and_capture(4 * 1448, 1.5)
        assert len(segs) >= 2, "no data in flight"
        _, p1, raw1 = segs[1]
        ack = struct.unpack("!I", raw1[(34 if not v6 else 54) + 8:(34 if not v6 else 54) + 12])[0]
        n0 = nstat(b.h1)
        b.notify(raw1, ack=(ack + 1) & 0xffffffff)
        b.notify(raw1, ack=(ack + 0x40000000) & 0xffffffff)
        b.notify(raw1, ack=(ack - 0x40000000) & 0xffffffff)
        n1 = wait_nstat(b.h1, n0, VERDICT_KEYS, 3, "h1 judged the 3 notifications with foreign ACKs")
        d = delta(n0, n1, FL_KEYS)
        print(f"foreign ACKs: {d}")
        assert d["TcpExtTCPFastLaneNotify"] == 0 and d["TcpExtTCPFastLaneBadSeq"] == 3, d
        b.notify(raw1)
        d = delta(n1, wait_nstat(b.h1, n1, VERDICT_KEYS, 1, "h1 judged the genuine one"), FL_KEYS)
        assert d["TcpExtTCPFastLaneNotify"] == 1, d
    finally:
        b.release()


def test_sysctl_off_is_stock(blocked):
    """with net.ipv4.tcp_fastlane=0 a notification is an ICMP error of an
    unknown type, as without the patch: ICMP discards it and counts it
    (RFC 1122 3.2.2), TCP never sees it; the segments carry what stock
    sends"""
    sh("sysctl -qw net.ipv4.tcp_fastlane=0", ns=blocked.h1)
    b = blocked.connect(False)
    try:
        segs = b.send_and_capture(2 * 1448, 1.5)
        _, p0, raw0 = segs[0]
        assert p0["opts"][:4] == bytes([1, 1, 8, 10]) and len(p0["opts"]) == 12, p0["opts"]
        n0 = nstat(b.h1)
        b.notify(raw0)
        d = delta(n0, wait_nstat(b.h1, n0, ["IcmpInErrors"] + VERDICT_KEYS, 1,
                                 "h1's ICMP (or TCP) counted the notification"),
                  FL_KEYS + ["IcmpInErrors", "IcmpMsgInType253"])
        assert all(d[k] == 0 for k in FL_KEYS), d
        assert d["IcmpInErrors"] == 1 and d["IcmpMsgInType253"] == 1, d
    finally:
        sh("sysctl -qw net.ipv4.tcp_fastlane=1", ns=b.h1)
        b.release()


def offset(p, p0):
    return (p["seq"] - p0["seq"]) & 0xffffffff


def latest(frames):
    """the last copy of each sequence number among (ts, p, raw) frames:
    the one a notification must name"""
    last = {}
    for ts, p, raw in frames:
        last[p["seq"]] = (ts, p, raw)
    return [last[k] for k in sorted(last, key=lambda q: last[q][0])]


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_no_new_data_while_recovering(blocked, v6):
    """Algorithm 1: data the application writes after a notification has
    started a recovery waits for the end of that recovery, although the
    window has room for it (stock Linux, PRR, would send it); once the
    lost segments are delivered the recovery ends and the data goes"""
    b = blocked.connect(v6)
    try:
        segs = b.send_and_capture(4 * 1448, 1.5)
        assert len(segs) >= 4, "no flight in flight"
        _, p0, raw0 = segs[0]
        top = max(offset(p, p0) + tcp_payload_len(p) for _, p, _ in segs)
        n0 = nstat(b.h1)
        t, got = b.watch(2.0)
        b.notify(latest([s_ for s_ in segs if s_[1]["seq"] == p0["seq"]])[0][2])
        wait_nstat(b.h1, n0, VERDICT_KEYS, 1, "h1 took the notification (the recovery started)")
        b.conn.c.send(b"z" * 4 * 1448)
        t.join()
        d = delta(n0, nstat(b.h1), FL_KEYS + ["TcpExtTCPTimeouts"])
        data = [(ts, p, raw) for ts, out, raw in got for p in [parse(raw)]
                if p and not out and p["dport"] == b.conn.port and tcp_payload_len(p) > 0]
        new = [offset(p, p0) for _, p, _ in data if offset(p, p0) >= top]
        print(f"recovering: {d}, {len(data)} data frames, beyond snd_nxt at entry: {new}")
        assert d["TcpExtTCPFastLaneNotify"] == 1 and d["TcpExtTCPFastLaneRetrans"] == 1
        assert d["TcpExtTCPTimeouts"] == 0
        assert any(p["seq"] == p0["seq"] for _, p, _ in data), "the notified segment was not resent"
        assert new == [], "new data was sent while recovering"
        # open the path and notify the latest copy of every segment in
        # flight: they are delivered, the recovery ends, the held data goes
        tc("qdisc del dev h2 root", b.lab.sw)
        t, got2 = b.watch(3.0)
        for _, p, raw in latest(segs + data):
            b.notify(raw)
        end = time.time() + 10
        while b.conn.received < 8 * 1448 and time.time() < end:
            time.sleep(0.1)
        t.join()
        after = [offset(p, p0) for ts, out, raw in got2 for p in [parse(raw)]
                 if p and not out and p["dport"] == b.conn.port and tcp_payload_len(p) > 0
                 and offset(p, p0) >= top]
        print(f"after: received {b.conn.received}, new data at offsets {sorted(set(after))}")
        assert b.conn.received == 8 * 1448, "the held data never went"
        assert after, "the held data went, but not after the recovery"
    finally:
        b.release()


TAIL_KEYS = FL_KEYS + ["TcpExtTCPFastLaneTailPush", "TcpExtTCPTimeouts"]


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_tail_push_new_data_leaves_with_the_last_retransmission(blocked, v6):
    """Issue 20 (incast, a departure from the paper): new data held by the
    recovery goes out, one segment, with the recovery's last retransmission
    when that is the last segment in flight, instead of waiting for the
    receiver's delayed ACK of a lone retransmission (40 ms).  A connection
    with one segment in flight: its notification starts the recovery and
    resends it; data written then is held (nothing to push it with); a
    notification for the resend resends it again, and one new segment, of
    at most one MSS, leaves with it (the path is blocked: no ACK ever lets
    it go otherwise)"""
    b = blocked.connect(v6)
    try:
        segs = b.send_and_capture(1000, 1.5)
        assert segs, "no data in flight"
        _, p0, raw0 = latest(segs)[-1]
        top = offset(p0, p0) + tcp_payload_len(p0)
        n0 = nstat(b.h1)
        t, got = b.watch(1.5)
        b.notify(raw0)
        wait_nstat(b.h1, n0, VERDICT_KEYS, 1, "h1 took the notification (the recovery started)")
        b.conn.c.send(b"z" * 4 * 1448)
        t.join()
        d = delta(n0, nstat(b.h1), TAIL_KEYS)
        data = [(ts, p, raw) for ts, out, raw in got for p in [parse(raw)]
                if p and not out and p["dport"] == b.conn.port and tcp_payload_len(p) > 0]
        new = [offset(p, p0) for _, p, _ in data if offset(p, p0) >= top]
        print(f"first notification: {d}, new data at {new}")
        assert d["TcpExtTCPFastLaneNotify"] == 1 and d["TcpExtTCPFastLaneRetrans"] == 1, d
        assert new == [] and d["TcpExtTCPFastLaneTailPush"] == 0, "new data was sent while recovering"
        resent = latest([f for f in data if f[1]["seq"] == p0["seq"]])
        assert resent, "the notified segment was not resent"
        # the resend is dropped too: its notification
        n1 = nstat(b.h1)
        t, got2 = b.watch(1.5)
        t_nf = time.time()
        b.notify(resent[-1][2])
        t.join()
        d = delta(n1, wait_nstat(b.h1, n1, VERDICT_KEYS, 1, "h1 judged the resend's notification"), TAIL_KEYS)
        data2 = [(ts, p) for ts, out, raw in got2 for p in [parse(raw)]
                 if p and not out and p["dport"] == b.conn.port and tcp_payload_len(p) > 0 and ts >= t_nf]
        again = [ts for ts, p in data2 if p["seq"] == p0["seq"]]
        new = [(ts, offset(p, p0), tcp_payload_len(p)) for ts, p in data2 if offset(p, p0) >= top]
        print(f"second notification: {d}, resent at {again}, new data {new}")
        assert d["TcpExtTCPFastLaneNotify"] == 1 and d["TcpExtTCPFastLaneRetrans"] == 1, d
        assert again, "the notified resend was not resent"
        assert d["TcpExtTCPFastLaneTailPush"] == 1, d
        # one segment, the first held one, right behind the resend
        assert len(new) == 1 and new[0][1] == top, new
        assert 0 < new[0][2] <= 1448, new
        assert new[0][0] >= again[0]
        assert d["TcpExtTCPTimeouts"] == 0, d
    finally:
        b.release()


def first(frames, pred):
    for ts, out, raw in list(frames):
        p = parse(raw)
        if p and not out and pred(p):
            return ts, p, raw
    return None


def wait_for(frames, pred, seconds):
    end = time.time() + seconds
    while time.time() < end:
        f = first(frames, pred)
        if f:
            return f
        time.sleep(0.005)
    return None


def listener_and_client(b, fam, dst, port):
    """a listener at dst:port in h2, and a non-blocking socket in h1 that
    has not connected yet"""
    with netns(b.lab.ns("h2")):
        ls = socket.socket(fam, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((dst, port))
        ls.listen(4)
    with netns(b.h1):
        c = socket.socket(fam, socket.SOCK_STREAM)
    c.setblocking(False)
    return ls, c


def control_resent_at_once(b, t, got, n0, ns, what, to, pick):
    """notify host `to` of the first control packet pick() finds in the
    capture (t, got) as soon as it shows: the notification is taken (ns's
    counters from n0) and the packet is resent well before its 1 s timer.
    One without the packet's timestamp comes first: refused (BadOpts)."""
    first_ = wait_for(got, pick, 0.9)
    assert first_, f"no {what} seen"
    t0, p0, raw0 = first_
    t_nf = time.time()
    b.notify(raw0, to=to, strip={8})
    b.notify(raw0, to=to)
    t.join()
    d = delta(n0, wait_nstat(ns, n0, VERDICT_KEYS, 2, f"{to} judged the {what}'s notifications"), FL_KEYS)
    assert d["TcpExtTCPFastLaneBadOpts"] == 1, d
    again = [ts for ts, out, raw in got for p in [parse(raw)]
             if p and not out and pick(p) and p["seq"] == p0["seq"] and ts > t0]
    print(f"{what}: {d}, notified {t_nf - t0:.3f} s after it, resent after"
          f" {[round(ts - t0, 3) for ts in again]} s")
    assert d["TcpExtTCPFastLaneNotify"] == 1 and d["TcpExtTCPFastLaneCtlResend"] == 1, d
    assert again and again[0] - t0 < 0.9, f"the {what} was not resent before its timer"


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_syn_and_fin_are_resent_at_once(blocked, v6):
    """a notification for a SYN in SYN_SENT resends it at once, long
    before its 1 s timer; one for a FIN in flight resends the FIN"""
    b = blocked
    b.release()
    b.v6 = v6
    b.port += 1
    port = b.port
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    dst = b.lab.ip("h2", v6)
    tc("qdisc del dev h2 root", b.lab.sw, check=False)
    tc("qdisc add dev h2 root netem loss 100%", b.lab.sw)
    ls, c = listener_and_client(b, fam, dst, port)
    try:
        n0 = nstat(b.h1)
        t, got = b.watch(2.0)
        c.connect_ex((dst, port))
        control_resent_at_once(b, t, got, n0, b.h1, "SYN", "h1",
                               lambda p: p["dport"] == port and p["flags"] & 0x12 == 0x02)
    finally:
        c.close()
        ls.close()
    # a FIN: on a connection whose data path is blocked, after its tail
    # loss probe (which resends the FIN) has been and gone
    b.connect(v6)
    try:
        t, got = b.watch(1.5)
        b.conn.c.shutdown(socket.SHUT_WR)
        t.join()
        fins = [(ts, p, raw) for ts, out, raw in got for p in [parse(raw)]
                if p and not out and p["dport"] == b.conn.port and p["flags"] & 0x01]
        assert fins, "no FIN seen"
        n0 = nstat(b.h1)
        t, got = b.watch(1.0)
        t_nf = time.time()
        b.notify(fins[-1][2])
        t.join()
        d = delta(n0, wait_nstat(b.h1, n0, VERDICT_KEYS, 1, "h1 judged the FIN's notification"), FL_KEYS)
        again = [ts - t_nf for ts, out, raw in got for p in [parse(raw)]
                 if p and not out and p["dport"] == b.conn.port and p["flags"] & 0x01 and ts >= t_nf]
        print(f"FIN: {d}, resent {again}")
        assert d["TcpExtTCPFastLaneNotify"] == 1 and d["TcpExtTCPFastLaneRetrans"] == 1, d
        assert again, "the FIN was not resent"
    finally:
        b.release()


@contextlib.contextmanager
def synack_pending(b, v6):
    """h1 connects to a listener in h2 whose SYN-ACKs the router throws
    away (netem on its port towards h1), with FastLane on in h2; yields
    (h2, its counters before, the capture at sw:h2, a predicate for the
    SYN-ACK) once the capture runs and the SYN is sent"""
    b.release()
    b.v6 = v6
    b.port += 1
    port = b.port
    h2 = b.lab.ns("h2")
    dst = b.lab.ip("h2", v6)
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    sh("sysctl -qw net.ipv4.tcp_fastlane=1", ns=h2)
    tc("qdisc del dev h2 root", b.lab.sw, check=False)
    tc("qdisc add dev h1 root netem loss 100%", b.lab.sw)
    ls, c = listener_and_client(b, fam, dst, port)
    try:
        n0 = nstat(h2)
        t, got = sniff(b.lab.sw, "h2", 2.0)
        c.connect_ex((dst, port))
        yield h2, n0, t, got, lambda p: p["sport"] == port and p["flags"] & 0x12 == 0x12
    finally:
        c.close()
        ls.close()
        tc("qdisc del dev h1 root", b.lab.sw, check=False)
        sh("sysctl -qw net.ipv4.tcp_fastlane=0", ns=h2)


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_synack_is_resent_at_once(blocked, v6):
    """a notification for the SYN-ACK of a request socket resends it at
    once, long before its 1 s timer"""
    with synack_pending(blocked, v6) as (h2, n0, t, got, is_synack):
        control_resent_at_once(blocked, t, got, n0, h2, "SYN-ACK", "h2", is_synack)


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_synack_is_resent_at_most_twice(blocked, v6):
    """notifications resend a request's SYN-ACK while it has been resent
    at most once (num_retrans < 2): two resends in all, as for a Fast
    Open child; four genuine notifications of one SYN-ACK in a row give
    two resends and two refusals (Stale).  Before, a third one went."""
    with synack_pending(blocked, v6) as (h2, n0, t, got, is_synack):
        first_ = wait_for(got, is_synack, 0.9)
        assert first_, "no SYN-ACK seen"
        # at once, well before the request's 1 s timer resends it too
        blocked.notify(first_[2], to="h2", count=4)
        t.join()
        d = delta(n0, wait_nstat(h2, n0, VERDICT_KEYS, 4, "h2 judged the 4 notifications"), FL_KEYS)
        print(f"SYN-ACK notified 4 times ({'ipv6' if v6 else 'ipv4'}): {d}")
        assert d["TcpExtTCPFastLaneNotify"] == 2 and d["TcpExtTCPFastLaneCtlResend"] == 2, d
        assert d["TcpExtTCPFastLaneStale"] == 2, d


# ------------------------------------------------- defects fixed (issue 20)

SPLAT = ("BUG:", "WARNING: CPU:", "Oops:", "------------[ cut here ]------------",
         "possible circular locking")


def splats():
    """the kernel's splat lines so far (KASAN reports start with BUG:)"""
    out = subprocess.run(["dmesg"], capture_output=True, text=True).stdout
    return [ln for ln in out.splitlines() if any(x in ln for x in SPLAT)]


class Sysctls:
    """set sysctls in a namespace for a while, then put them back"""

    def __init__(self, ns, **kv):
        self.ns, self.kv = ns, {f"net.ipv4.{k}": v for k, v in kv.items()}

    def __enter__(self):
        self.saved = {k: sh(f"sysctl -n {k}", ns=self.ns).strip() for k in self.kv}
        sh("sysctl -qw " + " ".join(f"{k}={v}" for k, v in self.kv.items()), ns=self.ns)
        return self

    def __exit__(self, *exc):
        sh("sysctl -qw " + " ".join(f"{k}={v}" for k, v in self.saved.items()), ns=self.ns)


SMALL = 300


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_collapsed_segment_not_used_after_free(blocked, v6):
    """Defect 3: resending a lost segment collapses the small segments
    after it into it (tcp_retrans_try_collapse), the notified one
    included: the notification's handler must not touch that skb again.
    s1 is notified while its original still waits in h1's own queue
    (netem delay), so it cannot be resent yet; s2's notification later
    resends s1, which swallows s2.  KASAN reports the old code's read.
    s1-s4 are captured as they enter h1's eth0 (mirrored to a dummy
    device before its netem): their notifications quote their timestamps."""
    b = blocked
    h1 = b.h1
    # no tail loss probe (it would resend s1-s4 on its own), no corking:
    # one skb per send
    with Sysctls(h1, tcp_early_retrans=0, tcp_autocorking=0):
        b.connect(v6)
        try:
            b.conn.c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            segs = b.send_and_capture(SMALL, 1.0)
            assert len(segs) == 1 and tcp_payload_len(segs[0][1]) == SMALL, segs
            _, p0, raw0 = segs[0]
            tc("qdisc add dev eth0 root netem delay 1500ms", h1)
            sh("ip link add flmir type dummy; ip link set flmir up", ns=h1)
            tc("qdisc add dev eth0 clsact", h1)
            tc("filter add dev eth0 egress matchall action mirred egress mirror dev flmir", h1)
            bad = splats()
            n0 = nstat(h1)
            mt, mgot = sniff(h1, "flmir", 0.6)
            for _ in range(4):
                b.conn.c.send(b"s" * SMALL)
                time.sleep(0.02)        # pacing: one skb per send
            mt.join()
            small = {p["seq"]: raw for _, out, raw in mgot for p in [parse(raw)]
                     if p and p["dport"] == b.conn.port and tcp_payload_len(p) == SMALL}
            s1, s2 = (p0["seq"] + SMALL) & 0xffffffff, (p0["seq"] + 2 * SMALL) & 0xffffffff
            assert s1 in small and s2 in small, sorted(small)
            # s1 is notified while its original is still in h1's netem (1.5
            # s): at once, not after polls that each start a tc in the guest
            b.notify(small[s1])
            n1 = wait_nstat(h1, n0, VERDICT_KEYS, 1, "h1 judged s1's notification")
            # the originals leave h1 (and die at the router)
            wait_until(lambda: qdisc_qlen(h1, "eth0", "netem") == 0, 10, "s1-s4 left h1's netem",
                       interval=0.1)
            t, got = b.watch(2.5)
            time.sleep(0.2)
            b.notify(small[s2])
            t.join()
            n2 = wait_nstat(h1, n1, VERDICT_KEYS, 1, "h1 judged s2's notification")
            keys = FL_KEYS + ["TcpExtTCPSpuriousRtxHostQueues"]
            d1, d2 = delta(n0, n1, keys), delta(n1, n2, keys)
            resent = [tcp_payload_len(p) for _, out, raw in got for p in [parse(raw)]
                      if p and not out and p["dport"] == b.conn.port
                      and p["seq"] == (p0["seq"] + SMALL) & 0xffffffff]
            print(f"s1 notified: {d1}\ns2 notified: {d2}\nresent from s1: {resent}")
            # s1 taken, but its original was still in the host: not resent
            assert d1["TcpExtTCPFastLaneNotify"] == 1 and d1["TcpExtTCPFastLaneRetrans"] == 0, d1
            assert d1["TcpExtTCPSpuriousRtxHostQueues"] >= 1, d1
            # s2 taken and resent, within s1's retransmission (s1-s4 in one)
            assert d2["TcpExtTCPFastLaneNotify"] == 1 and d2["TcpExtTCPFastLaneRetrans"] == 1, d2
            assert resent and resent[0] == 4 * SMALL, resent
            assert splats() == bad, "a splat: " + "\n".join(splats()[len(bad):])
        finally:
            tc("qdisc del dev eth0 root", h1, check=False)
            tc("qdisc del dev eth0 clsact", h1, check=False)
            sh("ip link del flmir 2>/dev/null || true", ns=h1)
            b.release()


@pytest.mark.parametrize("guard", ["md5", "minttl"])
@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_protected_connection_refuses_notifications(blocked, v6, guard):
    """Defect 2: a notification is plaintext and unauthenticated: a
    connection protected by TCP-MD5 (or TCP-AO, or IPsec) or by a minimum
    TTL never acts on one (counted Refused), where it would refuse the
    same packet as a segment.  (A socket filter sees segments, not ICMP
    errors, as for every ICMP error.)"""
    b = blocked
    b.connect(v6, md5=b"fastlane-md5-key" if guard == "md5" else None)
    try:
        c = b.conn.c
        if guard == "minttl":
            if v6:
                c.setsockopt(socket.IPPROTO_IPV6, 73, 255)      # IPV6_MINHOPCOUNT
            else:
                c.setsockopt(socket.IPPROTO_IP, 21, 255)        # IP_MINTTL
        segs = b.send_and_capture(2 * 1448, 1.0)
        assert segs, "no data in flight"
        _, p0, raw0 = segs[0]
        if guard == "md5":
            assert bytes([19, 18]) in p0["opts"], "no TCP-MD5 option on the wire"
        n0 = nstat(b.h1)
        t, got = b.watch(1.0)
        t_nf = time.time()
        b.notify(latest(segs)[0][2])
        t.join()
        d = delta(n0, wait_nstat(b.h1, n0, VERDICT_KEYS, 1, "h1 judged the notification"), FL_KEYS)
        resent = [p for ts, out, raw in got for p in [parse(raw)]
                  if p and not out and ts >= t_nf and p["dport"] == b.conn.port and tcp_payload_len(p) > 0]
        print(f"{guard}: {d}, resent {len(resent)}")
        assert d["TcpExtTCPFastLaneNotify"] == 0 and d["TcpExtTCPFastLaneRetrans"] == 0, d
        assert d["TcpExtTCPFastLaneRefused"] == 1, d
        assert resent == [], "a refused notification made the sender resend"
    finally:
        b.release()


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_no_timestamps_refuses_notifications(blocked, v6):
    """FastLane requires timestamps: a connection without them cannot
    tell which transmission of a segment a notification stands for, nor
    one from before a timeout: it refuses every one (Refused) and resends
    nothing"""
    b = blocked
    with Sysctls(b.h1, tcp_timestamps=0):
        b.connect(v6)
        try:
            segs = b.send_and_capture(2 * 1448, 1.0)
            assert segs, "no data in flight"
            _, p0, raw0 = segs[0]
            assert p0["opts"] == b"", p0["opts"]
            n0 = nstat(b.h1)
            t, got = b.watch(1.0)
            t_nf = time.time()
            b.notify(raw0)
            t.join()
            d = delta(n0, wait_nstat(b.h1, n0, VERDICT_KEYS, 1, "h1 judged the notification"), FL_KEYS)
            resent = [p for ts, out, raw in got for p in [parse(raw)]
                      if p and not out and ts >= t_nf and p["dport"] == b.conn.port and tcp_payload_len(p) > 0]
            print(f"no timestamps: {d}, resent {len(resent)}")
            assert d["TcpExtTCPFastLaneRefused"] == 1 and d["TcpExtTCPFastLaneNotify"] == 0, d
            assert resent == [], "a refused notification made the sender resend"
        finally:
            b.release()


@pytest.mark.parametrize("opts", ["sack-off"])
@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_recovery_ends_without_sack(blocked, v6, opts):
    """Defect 1: without SACK (the paper's set-up) Linux keeps a Reno
    socket in CA_Recovery after snd_una reaches high_seq, until data
    above it is acknowledged; the recovery hold must end there anyway,
    or the data written meanwhile waits forever (no timer is armed)"""
    b = blocked
    with Sysctls(b.h1, tcp_sack=0):
        b.connect(v6)
        try:
            segs = b.send_and_capture(4 * 1448, 1.0)
            assert len(segs) >= 4, "no flight in flight"
            _, p0, raw0 = segs[0]
            # the path opens; the flight is lost; a notification for its
            # first segment starts a recovery (NewReno resends the rest)
            tc("qdisc del dev h2 root", b.lab.sw)
            n0 = nstat(b.h1)
            b.notify(raw0)
            wait_nstat(b.h1, n0, VERDICT_KEYS, 1, "h1 took the notification (the recovery started)")
            b.conn.c.send(b"z" * 4 * 1448)
            end = time.time() + 8
            while b.conn.received < 8 * 1448 and time.time() < end:
                time.sleep(0.1)
            d = delta(n0, nstat(b.h1), FL_KEYS + ["TcpExtTCPTimeouts"])
            print(f"{opts}: {d}, received {b.conn.received}")
            assert d["TcpExtTCPFastLaneNotify"] == 1, d
            assert b.conn.received == 8 * 1448, "the data written during recovery never went"
        finally:
            b.release()


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_forged_flood_does_not_starve_genuine(blocked, v6):
    """Defect 4: forged notifications in a burst around a genuine one must
    not use up the socket's rate budget (2 * cwnd + 16 a round trip):
    only those that pass every check count.  A 200 ms round trip (the
    handshake through netem) keeps the burst within one budget period."""
    b = blocked
    tc("qdisc add dev eth0 root netem delay 200ms", b.h1)
    try:
        b.connect(v6)
    finally:
        tc("qdisc del dev eth0 root", b.h1, check=False)
    try:
        segs = b.send_and_capture(4 * 1448, 1.0)
        assert len(segs) >= 2
        _, p1, raw1 = latest(segs)[1]
        forged = b.notify(raw1, seq=(p1["seq"] + 10_000_000) & 0xffffffff, send=False)
        genuine = b.notify(raw1, send=False)
        n0 = nstat(b.h1)
        b.send_frames([forged] * 200 + [genuine] + [forged] * 200)
        d = delta(n0, wait_nstat(b.h1, n0, VERDICT_KEYS, 401, "h1 judged the 401 notifications"), FL_KEYS)
        print(f"flood around a genuine notification: {d}")
        assert d["TcpExtTCPFastLaneOutOfWindow"] == 400, d
        assert d["TcpExtTCPFastLaneNotify"] == 1 and d["TcpExtTCPFastLaneRetrans"] == 1, d
        assert d["TcpExtTCPFastLaneRateLimited"] == 0, d
    finally:
        b.release()


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_notifications_wait_in_backlog_while_socket_owned(blocked, v6):
    """Defect 5: notifications that find the socket owned by the user
    wait in its backlog like any segment, and every one is acted on (the
    first taken, its copies stale): a private queue of 8 dropped the rest
    (TCPFastLaneLockDropped).  The application owns the socket through a
    48 MB send() into a large send buffer while 30 arrive."""
    b = blocked
    b.connect(v6)
    try:
        c = b.conn.c
        segs = b.send_and_capture(4 * 1448, 1.0)
        assert len(segs) >= 2
        nf = b.notify(latest(segs)[1][2], send=False)
        c.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, 128 << 20)
        big = b"b" * (48 << 20)
        n0 = nstat(b.h1)
        sender = threading.Thread(target=lambda: c.send(big))
        sender.start()
        time.sleep(0.03)        # deliberate: the sender is inside send() (not observable)
        b.send_frames([nf] * 30)
        sender.join(60)
        d = delta(n0, wait_nstat(b.h1, n0, VERDICT_KEYS, 30, "h1 judged the 30 notifications"), FL_KEYS)
        print(f"while owned: {d}")
        assert d["TcpExtTCPFastLaneLockDropped"] == 0, d
        assert d["TcpExtTCPFastLaneNotify"] == 1 and d["TcpExtTCPFastLaneRetrans"] == 1, d
        # copies before the resend are stale (that transmission was
        # notified), copies after it stale by timestamp
        assert d["TcpExtTCPFastLaneNotify"] + d["TcpExtTCPFastLaneStale"] + \
            d["TcpExtTCPFastLaneStaleTS"] == 30, d
    finally:
        b.release()


# ------------------------------------------------ issue 20, second session

def tcp_csum(v6, src, dst, l4):
    """l4 with a valid TCP checksum for addresses src -> dst"""
    if v6:
        ph = socket.inet_pton(socket.AF_INET6, src) + socket.inet_pton(socket.AF_INET6, dst) + \
            struct.pack("!IxxxB", len(l4), 6)
    else:
        ph = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!xBH", 6, len(l4))
    l4 = l4[:16] + b"\0\0" + l4[18:]
    return l4[:16] + struct.pack("!H", inet_csum(ph + l4)) + l4[18:]


def tcp_csum_ok(raw):
    """does the TCP checksum of the IP packet in Ethernet frame raw
    verify over what the frame carries?"""
    p = parse(raw)
    ip = raw[14:]
    if p["v6"]:
        l4 = ip[40:]
        ph = ip[8:40] + struct.pack("!IxxxB", len(l4), 6)
    else:
        ihl = (ip[0] & 15) * 4
        l4 = ip[ihl:]
        ph = ip[12:20] + struct.pack("!xBH", 6, len(l4))
    return inet_csum(ph + l4) == 0


def burst_valid(port, v6, seqs, payload=PAYLOAD, tos=0, sport=40000, dport=5001, flags=0x18):
    """Port.burst, with valid TCP checksums: segments a real host sends"""
    src, dst = port.addrs[v6]
    frames = [frame(v6, port.h1_mac, port.next_hop_mac, src, dst,
                    tcp_csum(v6, src, dst, tcp_segment(sport, dport, s, b"\x5a" * payload, flags)),
                    tos=tos)
              for s in seqs]
    with netns(port.lab.ns("h1")):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind(("eth0", 0))
        for f in frames:
            s.send(f)
        s.close()
    return len(frames[0]) - 14


BOUND_KEYS = FL_KEYS + ["TcpExtTCPFastLaneBoundAllowed", "TcpExtTCPFastLaneBoundLowest",
                        "TcpExtTCPFastLaneBoundThrottled", "TcpExtTCPTimeouts"]


def resent_bytes(got, port, after, p0, top):
    """payload bytes h1 sent again (below top, offsets from p0) after time after"""
    ranges = set()
    for ts, out, raw in got:
        p = parse(raw)
        if p and not out and p["dport"] == port and ts >= after and tcp_payload_len(p) > 0 \
                and offset(p, p0) < top:
            ranges.add((offset(p, p0), tcp_payload_len(p)))
    return sum(n for _, n in ranges), sorted(ranges)


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_bound_sim_throttles_notified_retransmissions(blocked, v6):
    """Algorithm 1's bound_sim: notifications for a whole window at once
    (cwnd 10 at entry) resend at most bound_sim = 10 / 2 / max(retx) = 5
    segments, the lowest first, before any ACK comes back (stock PRR,
    with every notified segment marked lost, resent all 10).  Once the
    path is open, notifications for those retransmissions (retx 2: the
    bound halves) and the ACKs they bring deliver the rest, no timeout."""
    b = blocked.connect(v6)
    try:
        segs = b.send_and_capture(10 * 1448, 1.5)
        flight = latest(segs)
        p0 = segs[0][1]
        top = max(offset(p, p0) + tcp_payload_len(p) for _, p, _ in segs)
        assert top >= 10 * 1400, f"no window in flight: {top}"
        n0 = nstat(b.h1)
        t, got = b.watch(1.5)
        t_nf = time.time()
        b.send_frames([b.notify(raw, send=False) for _, _, raw in flight])
        t.join()
        d = delta(n0, wait_nstat(b.h1, n0, VERDICT_KEYS, len(flight), "h1 judged the window's notifications"),
                  BOUND_KEYS)
        sent, ranges = resent_bytes(got, b.conn.port, t_nf, p0, top)
        print(f"window notified: {d}, resent {sent} bytes {ranges}")
        assert d["TcpExtTCPTimeouts"] == 0
        assert d["TcpExtTCPFastLaneNotify"] == len(flight), d
        assert ranges and ranges[0][0] == 0, "the lowest sequence was not resent"
        # at most bound_sim = 5 segments (of at most 1448 bytes each)
        assert sent <= 5 * 1448, f"{sent} bytes resent: bound_sim not held"
        assert sent >= 4 * 1400, f"only {sent} bytes resent"
        assert d["TcpExtTCPFastLaneBoundThrottled"] >= 1, d
        # the path opens; notifications of the retransmissions (dropped
        # too) bring the rest through with their ACKs
        tc("qdisc del dev h2 root", b.lab.sw)
        again = latest([(ts, p, raw) for ts, out, raw in got for p in [parse(raw)]
                        if p and not out and p["dport"] == b.conn.port and ts >= t_nf
                        and tcp_payload_len(p) > 0])
        n1 = nstat(b.h1)
        b.send_frames([b.notify(raw, send=False) for _, _, raw in again])
        end = time.time() + 10
        while b.conn.received < 10 * 1448 and time.time() < end:
            time.sleep(0.1)
        d = delta(n1, nstat(b.h1), BOUND_KEYS)
        print(f"renotified {len(again)}: {d}, received {b.conn.received}")
        assert b.conn.received == 10 * 1448, "the throttled segments never went"
        assert d["TcpExtTCPTimeouts"] == 0, d
    finally:
        b.release()


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_duplicate_notification_is_taken_once(blocked, v6):
    """A second notification of a transmission already notified (a copy,
    or a replay) is stale: Algorithm 1's entry.retx, bound_sim's divisor,
    counts each dropped transmission once.  A window of 10 notified at
    once: bound_sim (10 / 2) resends 5 and holds the rest, which keep the
    timestamps of the notified transmissions.  Their notifications again
    are counted stale and not taken (before: each was taken again, retx
    2 for those segments, and the rate budget paid twice)."""
    b = blocked.connect(v6)
    try:
        segs = b.send_and_capture(10 * 1448, 1.5)
        flight = latest(segs)
        assert len(flight) >= 8, f"no window in flight: {len(flight)} segments"
        n0 = nstat(b.h1)
        t, got = b.watch(1.5)
        t_nf = time.time()
        b.send_frames([b.notify(raw, send=False) for _, _, raw in flight])
        t.join()
        wait_nstat(b.h1, n0, VERDICT_KEYS, len(flight), "h1 judged the window's notifications")
        resent = {p["seq"] for ts, out, raw in got for p in [parse(raw)]
                  if p and not out and p["dport"] == b.conn.port and ts >= t_nf
                  and tcp_payload_len(p) > 0}
        held = [raw for _, p, raw in flight if p["seq"] not in resent]
        assert held, "bound_sim held no notified segment"
        n1 = nstat(b.h1)
        b.send_frames([b.notify(raw, send=False) for raw in held])
        d = delta(n1, wait_nstat(b.h1, n1, VERDICT_KEYS, len(held), "h1 judged the duplicates"),
                  FL_KEYS)
        print(f"{len(held)} held segments notified again: {d}")
        assert d["TcpExtTCPFastLaneNotify"] == 0, d
        assert d["TcpExtTCPFastLaneStale"] == len(held), d
    finally:
        b.release()


def offloads_off(ns):
    """turn TSO and GSO off on eth0 of namespace ns; returns the command
    that puts back exactly the features this changed (a plain "tso on gso
    on" turns on sub-features a fresh veth has off, and later tests see
    other frames)"""
    def feats():
        return {ln.split(":")[0].strip(): ln.split(":")[1].split()[0]
                for ln in sh("ethtool -k eth0", ns=ns).splitlines()[1:] if ":" in ln and ln.split(":")[1].split()}
    before = feats()
    sh("ethtool -K eth0 tso off gso off >/dev/null", ns=ns)
    after = feats()
    changed = " ".join(f"{k} {v}" for k, v in before.items() if after.get(k) != v)
    return f"ethtool -K eth0 {changed} >/dev/null" if changed else "true"


def tcp_info_unacked_mss(s):
    """(packets_out, the payload of a full segment) of a FastLane socket:
    struct tcp_info's tcpi_unacked (the u32 at 24), and tcpi_snd_mss (at
    16) less the 8 bytes of the timeout-count option on every segment"""
    info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    return struct.unpack_from("I", info, 24)[0], struct.unpack_from("I", info, 16)[0] - 8


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_held_notified_segment_does_not_end_the_pass(blocked, v6):
    """bound_sim throttles only the segments notifications named: a
    notified segment it holds is skipped, and lost segments after it that
    no notification named (RACK marks them, from SACKs) go in the same
    pass.  A window S0..S9 in flight; S1 and S2 notified round after round
    until bound_sim (10 / 2 / retx, rounded up) is 1: one of them is
    resent per round, the other held.  Then the originals of S6..S9 reach
    h2, whose SACKs make RACK mark S0 and S3..S5 lost: they go at once,
    one per SACK as PRR allows (the RTO is 60 s here, and no TLP fires
    in recovery).  Before, the held S2 ended every pass: S0 went, and
    S3..S5 waited for an ACK that never came."""
    b = blocked.connect(v6)
    restore = offloads_off(b.h1)
    try:
        _, mss = tcp_info_unacked_mss(b.conn.c)
        segs = b.send_and_capture(10 * mss, 1.5)
        p0 = min((p for _, p, _ in segs), key=lambda p: p["seq"])
        flight = sorted(latest(segs), key=lambda f: offset(f[1], p0))
        assert len(flight) == 10, [(offset(p, p0), tcp_payload_len(p)) for _, p, _ in flight]
        S = [raw for _, _, raw in flight]
        seqs = [p["seq"] for _, p, _ in flight]
        notified = {seqs[1]: S[1], seqs[2]: S[2]}
        keys = FL_KEYS + ["TcpExtTCPTimeouts", "TcpExtTCPFastLaneBoundThrottled",
                          "TcpExtTCPLossProbes"]
        n0 = nstat(b.h1)
        per_round = []
        for _ in range(6):
            t, got = b.watch(0.5)
            t_nf = time.time()
            b.send_frames([b.notify(raw, send=False) for raw in notified.values()])
            t.join()
            resent = set()
            for ts, out, raw in got:
                p = parse(raw)
                if p and not out and ts >= t_nf and p["seq"] in notified and tcp_payload_len(p) > 0:
                    notified[p["seq"]] = raw
                    resent.add(p["seq"])
            per_round.append(len(resent))
        mid = delta(n0, nstat(b.h1), keys)
        assert per_round[-1] == 1, f"resends per round {per_round}: bound_sim not 1 ({mid})"
        assert mid["TcpExtTCPFastLaneBoundThrottled"] >= 1, mid
        # S6..S9 reach h2: its SACKs come back to h1 over the open path.
        # The window is long for a loaded TCG guest and still far below
        # the 60 s RTO that the lost segments waited for before.
        t, got = b.watch(6.0)
        t_sack = time.time()
        for raw in S[6:]:
            deliver(b, raw)
        t.join()
        again = sorted({seqs.index(p["seq"]) for ts, out, raw in got for p in [parse(raw)]
                        if p and not out and ts >= t_sack and p["dport"] == b.conn.port
                        and p["seq"] in seqs and tcp_payload_len(p) > 0})
        d = delta(n0, nstat(b.h1), keys)
        print(f"held S2 ({'ipv6' if v6 else 'ipv4'}): resends per round {per_round}; "
              f"after the SACKs resent S{again}; {d}")
        assert d["TcpExtTCPTimeouts"] == 0, d
        assert 0 in again, f"the lowest sequence was not resent: S{again}"
        assert 3 in again and 4 in again, f"lost segments behind the held S2 waited: S{again}"
    finally:
        sh(restore, ns=b.h1, check=False)
        b.release()


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_notification_splits_only_at_segment_boundaries(blocked, v6):
    """A notification names one wire segment: it starts at a multiple of
    the skb's MSS and is an MSS long (or the rest of the skb).  Anything
    else is refused and counted (TCPFastLaneBadSeq), and the retransmit
    queue is not split: one in the middle of a segment used to split it
    at any byte (twice), the SACK-slowness class (CVE-2019-11478) that
    SACK's MSS-aligned splits avoid.  A genuine one still resends its
    bytes, and an aligned one for one segment of a TSO skb splits it."""
    b = blocked.connect(v6)
    try:
        segs = b.send_and_capture(4 * 1448, 1.5)
        assert segs, "no data in flight"
        unacked0, mss = tcp_info_unacked_mss(b.conn.c)
        ts0, p0, raw0 = min(segs, key=lambda f: f[1]["seq"])
        len0 = tcp_payload_len(p0)
        assert len0 > 200, len0
        n0 = nstat(b.h1)
        # in the middle of a segment, an MSS long; at its start, 100 bytes
        b.notify(raw0, seq=(p0["seq"] + 100) & 0xffffffff, payload=min(mss, len0))
        b.notify(raw0, payload=100)
        n1 = wait_nstat(b.h1, n0, VERDICT_KEYS, 2, "h1 judged the 2 misaligned notifications")
        d = delta(n0, n1, FL_KEYS)
        unacked1, _ = tcp_info_unacked_mss(b.conn.c)
        print(f"misaligned ({'ipv6' if v6 else 'ipv4'}): {d}, packets_out {unacked0} -> {unacked1}, "
              f"mss {mss}, first frame {len0} bytes")
        assert d["TcpExtTCPFastLaneBadSeq"] == 2, d
        assert d["TcpExtTCPFastLaneNotify"] == 0 and d["TcpExtTCPFastLaneRetrans"] == 0, d
        assert unacked1 == unacked0, f"the queue was split: packets_out {unacked0} -> {unacked1}"
        # genuine: the second MSS of a TSO frame, or the whole first frame
        if len0 >= 2 * mss:
            off, n = mss, mss
        else:
            off, n = 0, len0
        t, got = b.watch(1.5)
        t_nf = time.time()
        if off:
            b.notify(raw0, seq=(p0["seq"] + off) & 0xffffffff, payload=n)
        else:
            b.notify(raw0)
        t.join()
        d = delta(n1, wait_nstat(b.h1, n1, VERDICT_KEYS, 1, "h1 judged the aligned notification"),
                  FL_KEYS)
        resent = sorted({(offset(p, p0), tcp_payload_len(p)) for ts, out, raw in got
                         for p in [parse(raw)] if p and not out and ts >= t_nf
                         and p["dport"] == b.conn.port and tcp_payload_len(p) > 0})
        print(f"aligned at {off}, {n} bytes: {d}, resent {resent}")
        assert d["TcpExtTCPFastLaneNotify"] == 1 and d["TcpExtTCPFastLaneRetrans"] == 1, d
        assert (off, n) in resent, f"not resent as notified: {resent}"
    finally:
        b.release()


def test_rate_limited_notification_is_not_a_timeout(routed):
    """Issue 20 (incast RTOs): a flight into a port that drops every data
    segment loops drop, notification, resend (the lowest sequence always
    goes) faster than the socket's round trip, until the socket's rate cap
    (2 * cwnd + 16 notifications a round trip) refuses some.  Such a
    notification still marks its segment lost; nothing goes at once, and
    the lowest sequence is resent when the cap's round trip is over
    (TCPFastLaneDeferred), so the retransmission timer never fires while
    the notifications keep coming.  Before, it was dropped: every loop
    ended at the cap, and the flight waited for the RTO."""
    # a buffer smaller than a data frame: every data segment is dropped
    port = routed.reset(rate="10mbit", fl="limit 1000 rate 10mbit")
    lab = port.lab
    h1, h2 = lab.ns("h1"), lab.ns("h2")
    sh("sysctl -qw net.ipv4.tcp_fastlane=1", ns=h1)
    # ACKs 1 s late: the socket's round trip, and its rate cap's period,
    # are 1 s, its RTO 3 s
    tc("qdisc add dev eth0 root netem delay 1s", h2)
    conn = None
    try:
        conn = Conn(lab, False, port=7300)
        keys = FL_KEYS + ["TcpExtTCPTimeouts", "TcpExtTCPFastLaneDeferred", "TcpExtTCPFastLaneTailPush"]
        n0 = nstat(h1)
        conn.c.sendall(b"x" * 10 * 1448)        # the initial window
        # 4 s: past the RTO the flight would wait for after its loops end
        time.sleep(4)
        # ... and the loops met the cap at least twice (a slow guest loops
        # slower: wait for it rather than assert a rate)
        mid = wait_until(lambda: (lambda m: m if m["TcpExtTCPFastLaneRateLimited"] > 0 and
                                  m["TcpExtTCPFastLaneDeferred"] >= 2 else None)(delta(n0, nstat(h1), keys)),
                         20, "the rate cap refused notifications and deferred the lowest resend twice",
                         interval=0.1)
        # in place: a new qdisc would lose the notifications in flight
        port.resize("limit 64kb rate 10mbit")
        end = time.time() + 20
        while conn.received < 10 * 1448 and time.time() < end:
            time.sleep(0.1)
        d = delta(n0, nstat(h1), keys)
        print(f"rate-limited loops: after 4 s {mid}; at the end {d}, received {conn.received}")
        assert conn.received == 10 * 1448
        # the scenario happened: the cap refused genuine notifications
        assert mid["TcpExtTCPFastLaneRateLimited"] > 0, mid
        assert d["TcpExtTCPTimeouts"] == 0, d
        # the lowest sequence resent at the end of each capped round trip
        assert mid["TcpExtTCPFastLaneDeferred"] >= 2, mid
    finally:
        tc("qdisc del dev eth0 root", h2, check=False)
        if conn:
            conn.close(wait=False)


UNDO_KEYS = ["TcpExtTCPPartialUndo", "TcpExtTCPFullUndo", "TcpExtTCPDSACKUndo", "TcpExtTCPLossUndo"]


def deliver(b, raw):
    """hand h2 the frame raw that h1 sent (captured at the router), as the
    router would forward it, past the netem that blocks the path"""
    p = parse(raw)
    ip = bytearray(raw[14:])
    ihl = 40 if p["v6"] else (ip[0] & 15) * 4
    ip[ihl:] = tcp_csum(p["v6"], p["src"], p["dst"], bytes(ip[ihl:]))
    with netns(b.lab.sw):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.setsockopt(SOL_PACKET, PACKET_QDISC_BYPASS, 1)
        s.bind(("h2", 0))
        s.send(b"".join(b.macs["h2"]) + raw[12:14] + bytes(ip))
        s.close()


SOL_PACKET = 263
PACKET_QDISC_BYPASS = 20


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_notified_loss_is_not_undone(blocked, v6):
    """Issue 20 (incast RTOs at N = 80, fifth session): a notification
    overtakes the queue the flight's first segments wait in, so their ACKs
    come after the resends, echoing a timestamp from before the first of
    them.  Linux takes that for a spurious recovery (tcp_packet_delayed())
    and undoes it once no resend is in flight (tcp_try_undo_partial()):
    every lost mark is cleared, the notified segments count as in flight
    again, and nothing resends them until the RTO.  A notified segment was
    dropped: its recovery must not be undone.  Here segments A, B, C (and
    a tail) are in flight; all but A are notified again and again until
    bound_sim holds all but one of them; then A's original reaches the
    receiver and its ACK comes: the others must still be resent."""
    b = blocked.connect(v6)
    sh("ethtool -K eth0 tso off gso off >/dev/null", ns=b.h1)
    try:
        segs = b.send_and_capture(3 * 1448, 1.0)
        # A: the first segment sent, its original copy; B, C (and the
        # tail: the MSS is less than 1448 with the timeout-count option)
        p_a, raw_a = segs[0][1], segs[0][2]
        notified = {p["seq"]: raw for _, p, raw in latest(segs) if p["seq"] != p_a["seq"]}
        assert len(notified) >= 2, [(p["seq"], tcp_payload_len(p)) for _, p, _ in segs]
        keys = FL_KEYS + UNDO_KEYS + ["TcpExtTCPTimeouts", "TcpExtTCPFastLaneBoundThrottled"]
        n0 = nstat(b.h1)
        # notify all but A (their last copies), round after round, until
        # bound_sim = alpha / max(retx) is below 1 (alpha 5, retx 6): the
        # paper's bound is a real number, so one resend still goes while
        # none is in flight, and the others wait for ACKs
        per_round = []
        for rounds in range(1, 7):
            t, got = b.watch(0.5)
            t_nf = time.time()
            b.send_frames([b.notify(raw, send=False) for raw in notified.values()])
            t.join()
            resent = set()
            for ts, out, raw in got:
                p = parse(raw)
                if p and not out and ts >= t_nf and p["seq"] in notified and tcp_payload_len(p) > 0:
                    notified[p["seq"]] = raw
                    resent.add(p["seq"])
            per_round.append(len(resent))
        mid = delta(n0, nstat(b.h1), keys)
        assert per_round[-1] <= 1, f"resends per round {per_round}: bound_sim not held ({mid})"
        assert mid["TcpExtTCPFastLaneBoundThrottled"] >= 1, mid
        # the path opens; the one resend of the last round was dropped
        # too, and a FastLane port would have said so: its notification
        # now (no resend is in flight after it: bound_sim lets it go
        # again and it arrives); then A's original arrives: its ACK
        # echoes A's timestamp, older than the first resend
        tc("qdisc del dev h2 root", b.lab.sw)
        n_pre = nstat(b.h1)
        b.send_frames([b.notify(notified[s], send=False) for s in resent])
        # its resend goes before A's original arrives
        wait_nstat(b.h1, n_pre, VERDICT_KEYS, len(resent), "h1 judged the last round's notification")
        deliver(b, raw_a)
        end = time.time() + 5
        while b.conn.received < 3 * 1448 and time.time() < end:
            time.sleep(0.05)
        d = delta(n0, nstat(b.h1), keys)
        print(f"notified loss, no undo ({'ipv6' if v6 else 'ipv4'}): resends per round {per_round}, {mid}; "
              f"then {d}, received {b.conn.received}")
        assert mid["TcpExtTCPFastLaneNotify"] >= 2 * rounds - 1, mid
        assert all(d[k] == 0 for k in UNDO_KEYS), d
        # B and C were resent after A's ACK (the RTO is 60 s here)
        assert b.conn.received == 3 * 1448, f"received {b.conn.received}: {d}"
    finally:
        sh("ethtool -K eth0 tso on gso on >/dev/null", ns=b.h1, check=False)
        b.release()


def tcp_info_ssthresh(s):
    # struct tcp_info: 8 bytes of u8, then u32s; tcpi_snd_ssthresh is at 76
    return struct.unpack_from("I", s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104), 76)[0]


def test_ssthresh_follows_congestion_control(blocked):
    """Defect 7: a notification that starts a recovery leaves ssthresh to
    the congestion control: CUBIC's beta (717/1024) takes a window of 10
    to 7 (the old code forced cwnd / 2 = 5 over it)"""
    b = blocked.connect(False)
    try:
        b.conn.c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
        segs = b.send_and_capture(10 * 1448, 1.0)
        n0 = nstat(b.h1)
        b.notify(latest(segs)[0][2])
        d = delta(n0, wait_nstat(b.h1, n0, VERDICT_KEYS, 1, "h1 judged the notification"), FL_KEYS)
        ss = tcp_info_ssthresh(b.conn.c)
        print(f"ssthresh {ss}, {d}")
        assert d["TcpExtTCPFastLaneNotify"] == 1, d
        assert ss == 7, f"ssthresh {ss}, CUBIC's is 7"
    finally:
        b.release()


def tcp_info_ca_state_cwnd(s):
    # struct tcp_info: tcpi_ca_state is byte 1, tcpi_snd_cwnd the u32 at 80
    info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    return info[1], struct.unpack_from("I", info, 80)[0]


TCP_CA_OPEN = 0


@pytest.mark.parametrize("opts", ["sack", "sack-off"])
@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_notified_recovery_ends_at_ssthresh(blocked, v6, opts):
    """Issue 20 (eleventh session): a recovery notifications drive is
    never undone (its undo_marker is cleared), and tcp_end_cwnd_reduction()
    took it for an undone one: cwnd stayed where it was, never reduced
    (here 10) or as low as PRR took it (at the bench's load 1, so that the
    next 2 KB answer waited 40 ms for a delayed ACK).  Two segments lost
    and notified, the path open: once both are acknowledged the socket is
    Open again with cwnd at ssthresh, CUBIC's 7 of a window of 10.
    Without SACK (Reno) the socket stays in Recovery at snd_una ==
    high_seq, and leaves it with the ACK of data written meanwhile (held
    until then): the notified recovery must still be known as such when
    that ACK ends it (the hold, which ends one ACK earlier, forgot it)."""
    if opts == "sack-off":
        with Sysctls(blocked.h1, tcp_sack=0):
            b = blocked.connect(v6)
    else:
        b = blocked.connect(v6)
    # two segments, two frames (TSO would send them as one)
    restore = offloads_off(b.h1)
    try:
        b.conn.c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
        nbytes = 2 * 1000
        segs = latest(b.send_and_capture(nbytes, 1.0))
        assert len(segs) >= 2, [(p["seq"], tcp_payload_len(p)) for _, p, _ in segs]
        tc("qdisc del dev h2 root", b.lab.sw)
        n0 = nstat(b.h1)
        b.send_frames([b.notify(raw, send=False) for _, _, raw in segs])
        if opts == "sack-off":
            # written during the recovery, held until snd_una reaches its
            # high_seq; its ACK is the one that ends a Reno recovery
            b.conn.c.send(b"z" * 1000)
            nbytes += 1000
        end = time.time() + 5
        while b.conn.received < nbytes and time.time() < end:
            time.sleep(0.05)
        # the last ACK processed: the socket leaves the recovery
        wait_until(lambda: tcp_info_ca_state_cwnd(b.conn.c)[0] == TCP_CA_OPEN, 5, "the socket is Open again")
        d = delta(n0, nstat(b.h1), FL_KEYS)
        state, cwnd = tcp_info_ca_state_cwnd(b.conn.c)
        ss = tcp_info_ssthresh(b.conn.c)
        print(f"after a notified recovery ({'ipv6' if v6 else 'ipv4'}, {opts}): ca_state {state}, "
              f"cwnd {cwnd}, ssthresh {ss}, received {b.conn.received}, {d}")
        assert d["TcpExtTCPFastLaneNotify"] >= 1, d
        assert b.conn.received == nbytes, f"received {b.conn.received}: {d}"
        assert state == TCP_CA_OPEN, f"ca_state {state}: the recovery did not end"
        assert ss == 7, f"ssthresh {ss}, CUBIC's is 7"
        assert cwnd == ss, f"cwnd {cwnd} after the recovery, ssthresh {ss}"
    finally:
        sh(restore, ns=b.h1, check=False)
        b.release()


IP_TOS = 1
IPV6_TCLASS = 67


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_codepoint_segments_are_segments(blocked, v6):
    """Defect 6: segments that carry the codepoint (IP_TOS, a peer that
    reflects or remarks it) are not notifications: whole, with a valid
    checksum, they reach the socket on a host with FastLane on (the old
    code took every TCP packet with the codepoint for a notification,
    and the handshake, the data and the ACKs of such a connection
    vanished)"""
    b = blocked
    b.release()
    tc("qdisc del dev h2 root", b.lab.sw, check=False)
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    lvl, opt = (socket.IPPROTO_IPV6, IPV6_TCLASS) if v6 else (socket.IPPROTO_IP, IP_TOS)
    dst = b.lab.ip("h2", v6)
    b.port += 1
    n0 = nstat(b.h1)
    with netns(b.lab.ns("h2")):
        ls = socket.socket(fam, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.setsockopt(lvl, opt, DSCP << 2)
        ls.bind((dst, b.port))
        ls.listen(1)
    with netns(b.h1):
        c = socket.socket(fam, socket.SOCK_STREAM)
    c.setsockopt(lvl, opt, DSCP << 2)
    c.settimeout(8)
    got = {"h2": 0}

    def serve():
        s, _ = ls.accept()
        s.settimeout(8)
        s.sendall(b"d" * 100000)
        while got["h2"] < 100000:
            x = s.recv(65536)
            if not x:
                break
            got["h2"] += len(x)
        s.close()
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        c.connect((dst, b.port))
        c.sendall(b"u" * 100000)
        n = 0
        while n < 100000:
            x = c.recv(65536)
            if not x:
                break
            n += len(x)
        t.join(8)
        d = delta(n0, nstat(b.h1), FL_KEYS)
        print(f"codepoint connection: h1 got {n}, h2 got {got['h2']}, {d}")
        assert n == 100000 and got["h2"] == 100000
        assert all(v == 0 for v in d.values()), d
    finally:
        c.close()
        ls.close()


def test_zero_payload_notification_is_not_a_segment(routed):
    """A notification of a segment without payload (a pure ACK) is an
    ICMP error like any other, never a segment: a host without FastLane
    discards it as an ICMP error of an unknown type (counted InErrors,
    RFC 1122 3.2.2), instead of taking it for a segment from the peer and
    answering with a reset; a host with FastLane takes it (here: no
    socket)"""
    # 1 kbit/s and 200 bytes: a 66-byte frame takes half a second, and
    # three fill the port (at 100 kbit/s and 1000 bytes, or 8 kbit/s,
    # the port drained them about as fast as python wrote them in the
    # debug guest, and hardly dropped)
    slow = "1kbit"
    port = routed.reset(rate=slow, fl=f"limit 200 rate {slow}")
    h1 = port.lab.ns("h1")
    keys = FL_KEYS + ["TcpOutRsts", "IcmpInErrors", "TcpInErrs"]
    try:
        for fl_on in (0, 1):
            sh(f"sysctl -qw net.ipv4.tcp_fastlane={fl_on}", ns=h1)
            port.reset(rate=slow, fl=f"limit 200 rate {slow}")
            n0 = nstat(h1)
            cap = port.notified()
            # 120: the HTB class lets about 1600 bytes (24 of them) through
            # at once before its rate applies, and the port holds 15
            burst_valid(port, False, range(100, 220), payload=0, flags=0x10)
            port.wait_notified(*cap)
            got = cap[2]
            nfs = [raw for _, out, raw in got if not out for p in [parse(raw)] if p and p["nf"]]
            # h1 counted every notification it received, one way or another
            d = delta(n0, wait_nstat(h1, n0, VERDICT_KEYS if fl_on else ["IcmpInErrors"], len(nfs),
                                     f"h1 counted the {len(nfs)} notifications"), keys)
            print(f"fastlane={fl_on}: {len(nfs)} notifications, {d}, port {port.stats()}")
            assert len(nfs) >= 10
            assert d["TcpOutRsts"] == 0, "a notification was taken for a segment"
            if fl_on:
                assert d["TcpExtTCPFastLaneNoSocket"] == len(nfs), d
            else:
                assert d["IcmpInErrors"] == len(nfs), d
                assert all(d[k] == 0 for k in FL_KEYS), d
    finally:
        sh("sysctl -qw net.ipv4.tcp_fastlane=0", ns=h1)


def test_codepoint_data_is_data_at_the_port(routed):
    """Defect 6 at the switch: whole segments with a valid checksum that
    carry the codepoint are data (queued, dropped and notified as data),
    not notifications with their priority and their caps"""
    port = routed.reset()
    t, got = port.capture(3)
    burst_valid(port, False, [1000 + i * PAYLOAD for i in range(30)], tos=DSCP << 2)
    t.join()
    st = port.stats()
    print(f"codepoint data: {st}")
    assert st["nf_queued"] == 0 and st["nf_cap_drops"] == 0, st
    assert st["drops"] >= 10 and st["nf_generated"] == st["drops"], st


def test_default_caps_hold_the_papers(routed):
    """Defect 6: a port's notifications get 1% of its rate and 2.5% of its
    buffer unless told otherwise.  Without `rate` the root qdisc reads the
    device's link speed; a leaf of a shaper (whose rate it cannot see)
    refuses to run uncapped unless `nf_rate 0` says so.  The
    notification buffer is carved out of `limit`: data gets the rest."""
    lab = routed.lab
    tc("qdisc del dev h2 root", lab.sw, check=False)
    tc("qdisc add dev h2 root fastlane limit 64kb", lab.sw)
    opts = json.loads(tc("-j qdisc show dev h2", lab.sw))[0]["options"]
    # veth reports 10 Gbit/s
    assert (opts["rate"], opts["nf_rate"]) == (1250000000, 12500000), opts
    tc("qdisc del dev h2 root", lab.sw)
    tc("qdisc add dev h2 root handle 1: htb default 1", lab.sw)
    tc("class add dev h2 parent 1: classid 1:1 htb rate 10mbit", lab.sw)
    err = tc_fails("qdisc add dev h2 parent 1:1 fastlane limit 64kb", lab.sw)
    assert "rate" in err and "nf_rate 0" in err, err
    tc("qdisc add dev h2 parent 1:1 handle 10: fastlane limit 64kb nf_rate 0", lab.sw)
    opts = [q for q in json.loads(tc("-j qdisc show dev h2", lab.sw)) if q["kind"] == "fastlane"][0]["options"]
    assert opts["nf_rate"] == 0
    assert "no room for data" in tc_fails("qdisc change dev h2 parent 1:1 handle 10: fastlane nf_limit 64kb",
                                          lab.sw)
    # carved out: limit 6400 holds 6400 - 160 bytes of data, five
    # 1066-byte frames (six before); the port sends one every 8.5 s
    port = routed.reset(rate="1kbit", fl="limit 6400 rate 1kbit")
    port.burst(False, [i * PAYLOAD for i in range(12)])
    # every frame sent, held or dropped (and notified)
    st = wait_until(lambda: (lambda q: q if q["packets"] + q["qlen"] + q["drops"] >= 12 and
                             q["nf_generated"] == q["drops"] else None)(port.stats()), 10,
                    "the port sent, held or dropped all 12 frames", interval=0.05)
    print(f"carved: {st}")
    assert st["nf_generated"] == st["drops"] > 0
    assert 4 * 1066 <= st["backlog"] <= 6400 - 160, st
