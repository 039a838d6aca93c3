"""HTB congestion signals (ecn_thresh / ecn_mode ce|ece|rwnd) in the booted
kernel, configured with the project's tc: configuration round trip and
errors, stock HTB untouched, CE marks only above the threshold, ECE
reaching a DCTCP sender, receive windows lowered (never raised) with
valid checksums, and the htback action that is the ACK side of ece and
rwnd (nothing touched without it, hostile and foreign packets counted and
passed).

The limiter sits on the router namespace's port towards the receiver h3,
as a hypervisor's limiter on a routed VM port would: data from h1 leaves
through it, h3's ACKs enter through the same device, where the htback
action (clsact ingress) hands them to the limiter's flow table.
"""
import json
import os
import re
import shlex
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import pytest

from dcnet import config
from dcnet.wait import scaled, wait_until
from dcnet.testbed.fabric import ns_exec
from dcnet.testbed.netlab import DLTRAFFIC, json_lines, sh, tc, tc_binary, tc_fails
from pktutil import inet_csum

HERE = os.path.dirname(os.path.abspath(__file__))
TC = config.get("DCNET_TC")
SYSTEM_TC = "/usr/sbin/tc" if os.path.exists("/usr/sbin/tc") else "/sbin/tc"
# The debug guest under TCG moves a few Mbit/s per flow, less while other
# processes run (a flow shaped to 2 Mbit/s got 1.2-1.5 Mbit/s and rarely
# queued beyond K): shape well below, so that the limiter is the bottleneck.
RATE_MBIT = 1
K = 15000                   # 10 packets, 120 ms at 1 Mbit/s
K_US = K * 8 / RATE_MBIT    # K as queueing delay, in microseconds
FLOW_BYTES = 600_000        # 4.8 s at 1 Mbit/s


WAIT_S = 60   # bounds the waits on events (x DCNET_TIMEOUT_SCALE)
# The rwnd tests' sender: a loss-based one that ignores ECN, as the mode is
# for.  Not cubic: its HyStart can leave slow start on the first rise of
# the RTT, which at 1 Mbit/s is the queue's first packets; the backlog then
# hovers about K, above it or not by the timing of a few ACKs (a 200 KB
# cubic flow on a loaded host now and then saw no rewrite at all).  Reno's
# slow start fills the window, and the queue goes well beyond K.
RWND_CC = "reno"
# The rwnd tests' limiter: with two tcpdumps in a debug guest beside
# another on a 2-core host, a flow reached only 320-410 kbit/s, below a
# 1 Mbit/s limiter, whose queue then never passed K (no rewrite at all)
RWND_RATE_KBIT = 250
# The ECE test's limiter: a DCTCP flow in a guest beside another on a slow
# host did not queue beyond K at 1 Mbit/s (no ACK marked); 150 KB is the
# same 4.8 s as FLOW_BYTES at RATE_MBIT
ECE_RATE_KBIT = RWND_RATE_KBIT
ECE_BYTES = 150_000
# the SYN storm: 25 times the flow table it must not disturb
STORM_TABLE = 16
STORM_SYNS = 25 * STORM_TABLE
RWND_BYTES = 400_000        # 12.8 s at 250 kbit/s


def limiter(lab, ecn="", dev="h3", rate=f"{RATE_MBIT}mbit", qopt="", ack=True):
    """HTB at the root of dev with one class 1:10; with ecn_mode ece or
    rwnd (and ack) also the htback action on dev's ingress, as the
    feature is configured"""
    tc(f"qdisc add dev {dev} root handle 1: htb default 10 {qopt}", lab.sw)
    tc(f"class add dev {dev} parent 1: classid 1:10 htb rate {rate}"
       f" ceil {rate} {ecn}", lab.sw)
    if ack and re.search(r"ecn_mode (ece|rwnd)", ecn):
        ack_action(lab, dev)


def ack_action(lab, dev="h3"):
    """the ACK side of ece/rwnd: htback on dev's ingress"""
    tc(f"qdisc add dev {dev} clsact", lab.sw)
    tc(f"filter add dev {dev} ingress matchall action htback", lab.sw)


ACK_COUNTERS = ("seen", "not_tcp", "no_htb", "no_table", "not_ingress")


def ack_counters(lab, dev="h3"):
    """the htback action's counters on dev's ingress"""
    out = json.loads(tc(f"-s -j filter show dev {dev} ingress", lab.sw))
    acts = []

    def walk(o):
        if isinstance(o, dict):
            if o.get("kind") == "htback":
                acts.append(o)
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(out)
    assert len(acts) == 1, out
    return {k: acts[0][k] for k in ACK_COUNTERS}


def find(obj, key):
    """The value of key anywhere in a tc -j dump, or None."""
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        obj = list(obj.values())
    if isinstance(obj, list):
        for v in obj:
            r = find(v, key)
            if r is not None:
                return r
    return None


def class_json(lab, dev="h3", classid="1:10", stats=True):
    for c in json.loads(tc(f"{'-s ' if stats else ''}-j class show dev {dev}", lab.sw)):
        if c.get("handle") == classid:
            return c
    raise AssertionError(f"class {classid} not found on {dev}")


def counter(lab, name, dev="h3"):
    v = find(class_json(lab, dev), name)
    assert v is not None, f"{name} missing from tc -s -j class show"
    return v


def nstat(ns, name):
    out = sh(f"nstat -asz {name}", ns=ns)
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == name:
            return int(f[1])
    return 0


def lab3(lab_factory, prefix):
    return lab_factory(["h1", "h3"], prefix=prefix)


def flow(lab, nbytes=FLOW_BYTES, cc="dctcp", v6=False, server=True, sample_ms=100):
    """One flow h1 -> h3; returns its record and its samples."""
    if server:
        lab.server("h3", 5001, v6=v6, cc=cc)
    args = [DLTRAFFIC, "flow", "-c", lab.ip("h3", v6), "-p", "5001", "--bytes", str(nbytes),
            "--cc", cc, "--id", "f"]
    if sample_ms:
        args += ["--sample-ms", str(sample_ms)]
    if v6:
        args.append("-6")
    p = lab.spawn("h1", args)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    recs = json_lines(out)
    rec = [r for r in recs if r["type"] == "flow"][0]
    return rec, [r for r in recs if r["type"] == "sample"]


def need_patched_tc():
    assert TC != "tc" and os.path.exists(TC), \
        "the patched tc was not built (make iproute2): DCNET_TC is unset"


# ------------------------------------------------------------ configuration

def test_configuration_round_trip(lab_factory):
    need_patched_tc()
    lab = lab3(lab_factory, "hc")
    limiter(lab, f"ecn_thresh {K} ecn_mode ece")
    text = tc("class show dev h3", lab.sw)
    assert "ecn_thresh 15000b ecn_mode ece" in text, text
    c = class_json(lab, stats=False)
    assert (find(c, "ecn_thresh"), find(c, "ecn_mode")) == (K, "ece"), c
    # a threshold alone selects ce; other parameters keep the settings
    tc(f"class change dev h3 parent 1: classid 1:10 htb rate {RATE_MBIT}mbit ecn_mode rwnd", lab.sw)
    c = class_json(lab, stats=False)
    assert (find(c, "ecn_thresh"), find(c, "ecn_mode")) == (K, "rwnd"), c
    tc(f"class change dev h3 parent 1: classid 1:10 htb rate {RATE_MBIT}mbit ecn_mode none", lab.sw)
    c = class_json(lab, stats=False)
    assert find(c, "ecn_mode") is None and find(c, "ecn_thresh") is None, c
    tc(f"class add dev h3 parent 1: classid 1:20 htb rate 1mbit ecn_thresh 20kb", lab.sw)
    c = class_json(lab, classid="1:20", stats=False)
    assert (find(c, "ecn_thresh"), find(c, "ecn_mode")) == (20 * 1024, "ce"), c
    # the counters are there, at zero
    s = class_json(lab)
    for name in ("ecn_ce_marked", "ecn_ece_marked", "rwnd_rewrites"):
        assert find(s, name) == 0, s


def test_stock_htb_unchanged_and_unpatched_tc_works(lab_factory):
    lab = lab3(lab_factory, "hs")
    limiter(lab)                # no new parameters
    rec, _ = flow(lab, nbytes=300_000, cc="dctcp", sample_ms=0)
    assert rec["bytes"] == 300_000
    c = class_json(lab)
    assert find(c, "ecn_mode") is None and find(c, "ecn_thresh") is None, c
    # no ECN counters: a stock class sends stock HTB's statistics
    for name in ("ecn_ce_marked", "ecn_ece_marked", "rwnd_rewrites"):
        assert find(c, name) is None, c
    # Debian's unpatched tc reads the longer xstats and configures HTB
    out = sh(f"{SYSTEM_TC} -s class show dev h3", ns=lab.sw)
    assert "lended:" in out and "tokens:" in out, out
    sh(f"{SYSTEM_TC} class add dev h3 parent 1: classid 1:30 htb rate 1mbit", ns=lab.sw)
    assert "1:30" in sh(f"{SYSTEM_TC} class show dev h3", ns=lab.sw)


def test_bad_configuration_is_refused(lab_factory):
    need_patched_tc()
    lab = lab3(lab_factory, "hb")
    sw = lab.sw
    limiter(lab)
    add = f"class add dev h3 parent 1: classid 1:11 htb rate {RATE_MBIT}mbit"
    assert "needs a non-zero ecn_thresh" in tc_fails(f"{add} ecn_mode ece", sw)
    assert "ecn_thresh must be" in tc_fails(f"{add} ecn_thresh 0", sw)
    assert "ecn_mode is one of" in tc_fails(f"{add} ecn_thresh 10kb ecn_mode red", sw)
    # threshold at or above the leaf fifo's limit
    tc("qdisc add dev h3 parent 1:10 handle 10: bfifo limit 10kb", sw)
    err = tc_fails(f"class change dev h3 parent 1: classid 1:10 htb rate {RATE_MBIT}mbit ecn_thresh 20kb", sw)
    assert "not below the class queue limit" in err, err
    # inner classes do not queue
    tc(f"class add dev h3 parent 1:10 classid 1:12 htb rate 1mbit", sw)
    err = tc_fails(f"class change dev h3 parent 1: classid 1:10 htb rate {RATE_MBIT}mbit ecn_thresh 5kb", sw)
    assert "leaf classes only" in err, err
    # ece/rwnd need HTB at the root
    tc("qdisc add dev h1 root handle 1: prio", sw)
    tc("qdisc add dev h1 parent 1:1 handle 2: htb", sw)
    err = tc_fails("class add dev h1 parent 2: classid 2:10 htb rate 1mbit ecn_thresh 15kb ecn_mode rwnd", sw)
    assert "root qdisc" in err, err
    # ... but ce does not
    tc("class add dev h1 parent 2: classid 2:10 htb rate 1mbit ecn_thresh 15kb ecn_mode ce", sw)
    # (ece/rwnd on an ifb device: test_ece_on_ifb_is_accepted_and_its_missing_acks_show)
    # nothing was half applied, and the qdisc still works
    assert "ecn" not in tc("class show dev h3", sw)
    rec, _ = flow(lab, nbytes=100_000, sample_ms=0)
    assert rec["bytes"] == 100_000


def htb_nl(ns, *args):
    """tests/guest/htb_nl.py in namespace ns: (exit code, stderr)"""
    p = subprocess.run(ns_exec(ns) + [sys.executable, os.path.join(HERE, "htb_nl.py")] + list(args),
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stderr.strip()


def test_misplaced_and_malformed_attributes_are_refused(lab_factory):
    """The qdisc options on a class, the class options on a qdisc, an ECN
    attribute of the wrong length and a dump-only counter are refused with
    a message naming the attribute, not silently ignored (tc never sends
    them: tests/guest/htb_nl.py does)"""
    need_patched_tc()
    lab = lab3(lab_factory, "hm")
    sw = lab.sw
    for opt in ("ecn_thresh", "ecn_mode", "ecn_flow_evictions"):
        rc, err = htb_nl(sw, "qdisc", "h3", "1:", opt, "1")
        assert rc == 2, (opt, err)
        assert f"(attribute {opt})" in err, err
        if opt != "ecn_flow_evictions":
            assert "ecn_thresh and ecn_mode are class options" in err, err
    assert "htb" not in tc("qdisc show dev h3", sw)
    limiter(lab, ecn="ecn_thresh 15kb")
    for opt, val in (("ecn_flows", "64"), ("ecn_flow_ttl", "1000")):
        for how, cls in (("class", "1:11"), ("class-change", "1:10")):
            rc, err = htb_nl(sw, how, "h3", "1:", cls, opt, val, "ecn_mode", "0")
            assert rc == 2, (how, opt, err)
            assert f"ecn_flows and ecn_flow_ttl are qdisc options. (attribute {opt})" in err, err
    rc, err = htb_nl(sw, "class", "h3", "1:", "1:11", "ecn_thresh64", "15000")
    assert rc == 2 and "invalid attribute length" in err, err
    out = tc("class show dev h3", sw)
    assert "1:11" not in out, out
    assert "ecn_thresh 15Kb ecn_mode ce" in out, out
    # and tc says so for what it sends in the wrong place
    err = tc_fails("class add dev h3 parent 1: classid 1:11 htb rate 1mbit ecn_flows 64", sw)
    assert "ecn_flows" in err, err


# ------------------------------------------------------------------ ce mode

@pytest.mark.parametrize("v6", [False, True])
def test_ce_marks_only_above_threshold(lab_factory, v6):
    lab = lab3(lab_factory, "he6" if v6 else "he4")
    limiter(lab, f"ecn_thresh {K} ecn_mode ce")
    lab.server("h3", 5001, v6=v6, cc="dctcp")
    # small flows: 6 packets never make a backlog of 10
    for _ in range(3):
        flow(lab, nbytes=8000, v6=v6, server=False, sample_ms=0)
        time.sleep(0.2)
    assert counter(lab, "ecn_ce_marked") == 0
    ce_mib = "Ip6InCEPkts" if v6 else "IpExtInCEPkts"
    ce_in = nstat(lab.ns("h3"), ce_mib)
    # a bulk DCTCP flow: marked, and kept near the threshold
    rec, samples = flow(lab, v6=v6, server=False)
    marked = counter(lab, "ecn_ce_marked")
    assert marked > 0
    assert nstat(lab.ns("h3"), ce_mib) - ce_in > 0, "the receiver saw no CE"
    assert counter(lab, "ecn_ece_marked") == 0
    # a flow that is not ECN capable is never marked, backlog or not
    sh("sysctl -qw net.ipv4.tcp_ecn=0", ns=lab.ns("h1"))
    lab.server("h3", 5002, v6=v6, cc="cubic")
    args = [DLTRAFFIC, "flow", "-c", lab.ip("h3", v6), "-p", "5002", "--bytes", str(FLOW_BYTES),
            "--cc", "cubic", "--id", "noecn", "--sample-ms", "100"] + (["-6"] if v6 else [])
    p = lab.spawn("h1", args)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    srtt = [r["srtt_us"] for r in json_lines(out) if r["type"] == "sample"]
    # it did build a backlog beyond K (K alone is 120 ms at this rate) ...
    assert max(srtt) > 2 * K_US, srtt
    # ... and got no mark
    assert counter(lab, "ecn_ce_marked") == marked


# ----------------------------------------------------------------- ece mode

def median_srtt(samples):
    # the first second is slow start
    t0 = samples[0]["t_us"]
    v = [s["srtt_us"] for s in samples if s["t_us"] - t0 > 1_000_000]
    return statistics.median(v or [s["srtt_us"] for s in samples])


@pytest.mark.parametrize("v6", [False, True])
def test_ece_reaches_dctcp_sender_and_cuts_the_queue(lab_factory, v6):
    lab = lab3(lab_factory, "hE6" if v6 else "hE4")
    rate = f"{ECE_RATE_KBIT}kbit"
    limiter(lab, rate=rate)
    plain, plain_s = flow(lab, nbytes=ECE_BYTES, v6=v6)
    tc(f"class change dev h3 parent 1: classid 1:10 htb rate {rate}"
       f" ceil {rate} ecn_thresh {K} ecn_mode ece", lab.sw)
    ack_action(lab)
    ce_mib = "Ip6InCEPkts" if v6 else "IpExtInCEPkts"
    ce_in = nstat(lab.ns("h3"), ce_mib)
    dce = nstat(lab.ns("h1"), "TcpExtTCPDeliveredCE")
    ece, ece_s = flow(lab, nbytes=ECE_BYTES, v6=v6, server=False)
    marked = counter(lab, "ecn_ece_marked")
    assert marked > 0
    assert counter(lab, "ecn_ce_marked") == 0
    # the signal reached the sender's DCTCP, and not through CE marks
    assert nstat(lab.ns("h1"), "TcpExtTCPDeliveredCE") - dce > 0
    assert nstat(lab.ns("h3"), ce_mib) - ce_in == 0
    rtt_plain, rtt_ece = median_srtt(plain_s), median_srtt(ece_s)
    # the premise: plain HTB queued well beyond K
    k_us = K * 8 * 1000 / ECE_RATE_KBIT
    assert rtt_plain > 2 * k_us, f"plain HTB never queued beyond K: median srtt {rtt_plain} us"
    print(f"median srtt: plain HTB {rtt_plain / 1000:.0f} ms, ece {rtt_ece / 1000:.0f} ms;"
          f" fct {plain['fct_us'] / 1e6:.2f} s vs {ece['fct_us'] / 1e6:.2f} s; {marked} ACKs marked")
    # What ece buys (the queue and the RTT cut, the limiter kept busy) is a
    # figure: make bench-htb measures it in virtual time. In real time
    # under TCG the guest's CPU share sets the RTT and the FCT as much as
    # the limiter does (two debug guests on a slow 2-core host failed both
    # cases), so they are printed here, not asserted.


# h3: accept one connection, drain it, and send 10 bytes every 0.1 s
# (segments with ACK set that enter the limiter's device, where htback
# hands them to the flow table, on their way to h1)
TICKER = """
import select, socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"dctcp")
s.bind(("0.0.0.0", 5004))
s.listen(1)
print("ready", flush=True)
c, _ = s.accept()
c.setblocking(False)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    if select.select([c], [], [], 0.1)[0]:
        try:
            c.recv(1 << 16)
        except BlockingIOError:
            pass
    try:
        c.send(b"x" * 10)
    except BlockingIOError:
        pass
"""
# h1: a DCTCP bulk sender that never stops by itself
BULK = """
import socket, sys
c = socket.socket()
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"dctcp")
c.connect((sys.argv[1], 5004))
while True:
    c.sendall(b"x" * 65536)
"""
LOW_K = 3000                # two packets


def test_ece_stops_once_the_leaf_is_purged(lab_factory):
    """The backlog the ACK side reads follows the leaf when it is replaced
    (its queue purged): an empty class gives no more ECE, though no packet
    enters it any more"""
    need_patched_tc()
    lab = lab3(lab_factory, "hp")
    sw = lab.sw
    limiter(lab, ecn=f"ecn_thresh {K} ecn_mode ece", rate=f"{ECE_RATE_KBIT}kbit")
    # h1's small packets (its ACKs of h3's bytes: IPv4 total length < 128)
    # go through a class of their own, so that they keep h3's ACK clock
    # going without entering 1:10 (an enqueue would refresh its backlog)
    tc("class add dev h3 parent 1: classid 1:20 htb rate 1mbit ceil 1mbit", sw)
    tc("filter add dev h3 parent 1: protocol ip prio 1 u32 match u16 0 0xff80 at 2"
       " flowid 1:20", sw)
    tick = lab.spawn("h3", [sys.executable, "-c", TICKER, str(scaled(WAIT_S * 3))])
    assert tick.stdout.readline().strip() == "ready"
    bulk = lab.spawn("h1", [sys.executable, "-c", BULK, lab.ip("h3")])

    def backlog():
        return find(class_json(lab), "backlog") or 0

    wait_until(lambda: counter(lab, "ecn_ece_marked") > 0, scaled(WAIT_S), "ECE while over K")
    # hold the queue (the class sends a packet every 1.5 s from now on)
    # and lower K below it: DCTCP keeps about K in flight, which the
    # frozen ACK clock cannot raise
    tc(f"class change dev h3 parent 1: classid 1:10 htb rate 8kbit ceil 8kbit"
       f" ecn_thresh {LOW_K} ecn_mode ece", sw)
    wait_until(lambda: backlog() > 2 * LOW_K, scaled(WAIT_S), "a backlog of 2 K")
    # no more data from h1 (its small ACKs pass), then the new leaf
    tc("qdisc add dev h1 handle ffff: ingress", sw)
    tc("filter add dev h1 parent ffff: protocol ip prio 1 u32 match u16 0 0xff80 at 2"
       " action pass", sw)
    tc("filter add dev h1 parent ffff: protocol all prio 2 matchall action drop", sw)
    tc("qdisc replace dev h3 parent 1:10 handle 20: pfifo", sw)
    assert backlog() == 0
    marked = counter(lab, "ecn_ece_marked")
    seen = ack_counters(lab)["seen"]
    # h3's segments keep crossing the htback action for 2 s (about 20)
    time.sleep(2)
    assert tick.poll() is None, "the ticker ended early"
    crossed = ack_counters(lab)["seen"] - seen
    got = counter(lab, "ecn_ece_marked") - marked
    print(f"{crossed} segments of h3 crossed htback, {got} got ECE")
    assert crossed > 5, "h3's segments did not reach htback"
    assert got == 0, f"{got} ACKs of an empty class got ECE"
    tick.kill()
    bulk.kill()


def test_ce_marks_with_a_pfifo_fast_leaf(lab_factory):
    """The threshold reads the leaf's qstats.backlog.  pfifo_fast, the one
    qdisc with per-CPU statistics that can be a class's leaf, gives them up
    when grafted under a locked parent (qdisc_graft(), qdisc_clear_nolock()),
    so its backlog is there as well: it gets marks like any leaf"""
    lab = lab3(lab_factory, "hq")
    limiter(lab, f"ecn_thresh {K} ecn_mode ce", rate="100kbit")
    tc("qdisc add dev h3 parent 1:10 handle 10: pfifo_fast", lab.sw)
    ce_in = nstat(lab.ns("h3"), "IpExtInCEPkts")
    # 300 KB into a 100 kbit/s class: far beyond K while the sender runs
    sent = tool(lab, "h1", "udpect", lab.ip("h3"), 300)["sent"]
    qlen = find(class_json(lab), "qlen")
    print(f"sent {sent}, class qlen after the burst {qlen}")
    assert qlen and qlen * 1000 > 2 * K, "the class never held 2 K"
    tc("class change dev h3 parent 1: classid 1:10 htb rate 100mbit ceil 100mbit", lab.sw)
    wait_until(lambda: find(class_json(lab), "qlen") in (0, None), WAIT_S, "the class's queue drained")
    marked, got = settled_ce(lab, "IpExtInCEPkts", ce_in)
    print(f"ecn_ce_marked {marked}, CE received {got}")
    assert marked > 0 and got > 0


# ---------------------------------------------------------------- rwnd mode

def pcap_packets(path):
    """(ip bytes, ethertype) of each frame of an Ethernet pcap."""
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    e = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    off = 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(e + "IIII", data[off:off + 16])
        frame = data[off + 16:off + 16 + incl]
        off += 16 + incl
        if len(frame) >= 14:
            yield frame[14:], struct.unpack("!H", frame[12:14])[0]


def tcp_segments(path):
    """Each TCP segment: dict with ack, window, tsval and whether the IP and
    TCP checksums verify."""
    for ip, etype in pcap_packets(path):
        if etype == 0x0800 and ip[9] == 6:
            ihl = (ip[0] & 15) * 4
            tot = struct.unpack("!H", ip[2:4])[0]
            ip_ok = inet_csum(ip[:ihl]) == 0
            tcp = ip[ihl:tot]
            pseudo = ip[12:20] + struct.pack("!BBH", 0, 6, len(tcp))
        elif etype == 0x86DD and ip[6] == 6:
            plen = struct.unpack("!H", ip[4:6])[0]
            ip_ok = True
            tcp = ip[40:40 + plen]
            pseudo = ip[8:40] + struct.pack("!IxxxB", len(tcp), 6)
        else:
            continue
        if len(tcp) < 20:
            continue
        ack, = struct.unpack("!I", tcp[8:12])
        win, = struct.unpack("!H", tcp[14:16])
        doff = (tcp[12] >> 4) * 4
        tsval = None
        opt = tcp[20:doff]
        i = 0
        while i < len(opt):
            if opt[i] == 0:
                break
            if opt[i] == 1:
                i += 1
                continue
            if i + 1 >= len(opt) or opt[i + 1] < 2:
                break
            if opt[i] == 8 and opt[i + 1] == 10:
                tsval, = struct.unpack("!I", opt[i + 2:i + 6])
            i += opt[i + 1]
        yield dict(ack=ack, win=win, tsval=tsval, syn=bool(tcp[13] & 2),
                   ok=ip_ok and inet_csum(pseudo + tcp) == 0)


def capture(lab, ns, dev, path, port=5001):
    """tcpdump on dev, returned once it listens: starting it takes
    seconds in this guest, and a fixed wait lost whole captures."""
    p = subprocess.Popen(ns_exec(ns) + ["tcpdump", "-U", "-n", "-s", "128", "-i", dev,
                          "-w", path, f"tcp and src port {port}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lab.procs.append(p)
    line = p.stderr.readline()          # "listening on DEV, link-type ..."
    assert "listening on" in line, f"tcpdump on {dev}: {line}"
    return p


def stop(p):
    time.sleep(0.5)
    p.terminate()
    p.wait(timeout=10)


def rwnd_run(lab, v6, tag, nbytes=FLOW_BYTES):
    out = config.get("DCNET_OUT")
    before = os.path.join(out, f"rwnd-{tag}-limiter-in.pcap")
    after = os.path.join(out, f"rwnd-{tag}-sender-in.pcap")
    c1 = capture(lab, lab.sw, "h3", before)
    c2 = capture(lab, lab.ns("h1"), "eth0", after)
    rec, samples = flow(lab, nbytes, cc=RWND_CC, v6=v6, server=False)
    stop(c1)
    stop(c2)
    # ACKs are matched by (ack, TSval); duplicates may carry several windows
    orig = {}
    for s in tcp_segments(before):
        if not s["syn"]:
            orig.setdefault((s["ack"], s["tsval"]), set()).add(s["win"])
    seen = [s for s in tcp_segments(after) if not s["syn"]]
    assert seen and orig, "nothing captured"
    # every ACK that reached the sender has valid checksums
    bad = sum(1 for s in seen if not s["ok"])
    # tcpdump under TCG misses some packets at either end: compare those
    # captured at both
    pairs = [(orig[(s["ack"], s["tsval"])], s["win"]) for s in seen
             if (s["ack"], s["tsval"]) in orig]
    assert len(pairs) >= 20 and len(pairs) > 0.3 * len(seen), (len(pairs), len(seen))
    return rec, samples, pairs, bad


@pytest.mark.parametrize("v6", [False, True])
def test_rwnd_lowers_windows_never_raises_them_checksums_valid(lab_factory, v6):
    lab = lab3(lab_factory, "hr6" if v6 else "hr4")
    rate = f"{RWND_RATE_KBIT}kbit"
    # a sender without ECN: the mode is for senders that ignore ECN
    sh("sysctl -qw net.ipv4.tcp_ecn=0", ns=lab.ns("h1"))
    # h3 computes full checksums, so that a wrong one would show
    sh("ethtool -K eth0 tx off >/dev/null", ns=lab.ns("h3"))
    limiter(lab, rate=rate)
    # the ACK side from the start: beside a stock HTB it changes nothing
    ack_action(lab)
    lab.server("h3", 5001, v6=v6, cc=RWND_CC)
    csum_err = nstat(lab.ns("h1"), "TcpInCsumErrors")

    # stock HTB: every ACK passes as it was sent
    plain, plain_s, pairs, bad = rwnd_run(lab, v6, f"plain{6 if v6 else 4}", RWND_BYTES)
    assert all(a in b for b, a in pairs), "stock HTB changed a window"
    assert bad == 0
    acts = ack_counters(lab)
    assert acts["seen"] == 0 and acts["no_table"] > 0, acts

    tc(f"class change dev h3 parent 1: classid 1:10 htb rate {rate}"
       f" ceil {rate} ecn_thresh {K} ecn_mode rwnd", lab.sw)
    rw, rw_s, pairs, bad = rwnd_run(lab, v6, f"rwnd{6 if v6 else 4}", RWND_BYTES)
    lowered = sum(1 for b, a in pairs if a < min(b))
    raised = sum(1 for b, a in pairs if a > max(b))
    rewrites = counter(lab, "rwnd_rewrites")
    rtt_plain, rtt_rw = median_srtt(plain_s), median_srtt(rw_s)
    k_us = K * 8 * 1000 / RWND_RATE_KBIT
    assert rtt_plain > 2 * k_us, f"plain HTB never queued beyond K: median srtt {rtt_plain} us"
    print(f"{len(pairs)} ACKs: {lowered} lowered, {raised} raised, {bad} bad checksums;"
          f" rwnd_rewrites {rewrites}; median srtt {rtt_plain / 1000:.0f} ms plain,"
          f" {rtt_rw / 1000:.0f} ms rwnd; fct {plain['fct_us'] / 1e6:.2f} s vs {rw['fct_us'] / 1e6:.2f} s")
    assert lowered > 0 and rewrites >= lowered, flows_dump(lab.sw)
    assert raised == 0
    assert bad == 0
    assert nstat(lab.ns("h1"), "TcpInCsumErrors") == csum_err
    assert counter(lab, "ecn_ece_marked") == 0 and counter(lab, "ecn_ce_marked") == 0
    # What rwnd buys (a shorter queue, the RTT, the same goodput) is a
    # figure, measured in virtual time by `make bench-htb`: here, in real
    # time under TCG, the guest's CPU share sets the RTT as much as the
    # limiter does, so the srtt and FCT above are printed, not asserted.


# ------------------------------------------------- issue 21: robustness cases


TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "htb_tools.py")
MSS = 1448


def tool(lab, host, *args, ns=None):
    """Run htb_tools.py in host's namespace (or ns); its JSON output."""
    argv = ns_exec(ns or lab.ns(host)) + [sys.executable, TOOLS] + [str(a) for a in args]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def capture_filter(lab, ns, dev, path, bpf, snaplen=128):
    # --immediate-mode: each packet to the file as it arrives; otherwise
    # the last ones can sit in the kernel's ring block when tcpdump is
    # stopped (the second batch of a test's ACKs went missing that way)
    p = subprocess.Popen(ns_exec(ns) + ["tcpdump", "-U", "--immediate-mode", "-n", "-s", str(snaplen),
                          "-i", dev, "-w", path, bpf],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lab.procs.append(p)
    line = p.stderr.readline()
    assert "listening on" in line, f"tcpdump on {dev}: {line}"
    return p


def reverse_flow(lab, nbytes, v6, port=5003):
    """h3 connects to h1, h1 sends nbytes: the data sender (whose data the
    limiter towards h3 shapes) is the passive side of the handshake."""
    srv = lab.spawn("h1", [sys.executable, TOOLS, "serve", str(port), str(nbytes), "--cc", RWND_CC]
                    + (["-6"] if v6 else []))
    assert srv.stdout.readline().strip() == "ready"
    rec = tool(lab, "h3", "fetch", lab.ip("h1", v6), port, *(["-6"] if v6 else []))
    srv.wait(timeout=30)
    return rec


@pytest.mark.parametrize("v6", [False, True])
@pytest.mark.parametrize("off", ["h1", "h3"])
def test_rwnd_window_scale_when_one_side_does_not_scale(lab_factory, off, v6):
    """Defect 2: the window scale applies only when both SYNs offered it.
    h1 (the data sender) is the passive side; tcp_window_scaling=0 on
    `off`.  The windows rwnd writes must be read unscaled: never below two
    segments, and the flow must keep the limiter busy."""
    lab = lab3(lab_factory, f"w{off[1]}{6 if v6 else 4}")
    for h in ("h1", "h3"):
        sh("sysctl -qw net.ipv4.tcp_ecn=0", ns=lab.ns(h))
    sh("sysctl -qw net.ipv4.tcp_window_scaling=0", ns=lab.ns(off))
    limiter(lab, f"ecn_thresh {K} ecn_mode rwnd", rate=f"{RWND_RATE_KBIT}kbit")
    out = config.get("DCNET_OUT")
    pcap = os.path.join(out, f"wscale-{off}-{6 if v6 else 4}.pcap")
    cap = capture_filter(lab, lab.ns("h1"), "eth0", pcap, "tcp and dst port 5003")
    nbytes = 200_000
    rec = reverse_flow(lab, nbytes, v6)
    stop(cap)
    assert rec["bytes"] == nbytes
    wins = [s["win"] for s in tcp_segments(pcap) if not s["syn"]]
    rewrites = counter(lab, "rwnd_rewrites")
    ideal_us = nbytes * 8 * 1000 / RWND_RATE_KBIT
    print(f"scaling off on {off}: {rewrites} rewrites, min window {min(wins)},"
          f" fct {rec['fct_us'] / 1e6:.2f} s (ideal {ideal_us / 1e6:.2f} s)")
    assert wins, "no ACK captured"
    # the flow was managed (its handshake was seen, whichever side opened)
    assert rewrites > 0, flows_dump(lab.sw)
    # no scaling in effect: a field below 2 segments is a window below 2
    # segments, which rwnd never asks for
    assert min(wins) >= 2 * MSS, sorted(wins)[:10]
    # the defect stalls the flow for minutes; under TCG a managed flow
    # takes 1-2x the ideal time on an idle host and more than 3x with two
    # debug guests on a slow 2-core host: the bound tells a stall from a
    # slow guest, not a rate
    assert rec["fct_us"] < 10 * ideal_us, rec


def test_xstats_keep_their_size_counters_are_statistics(lab_factory):
    """Defect 4: struct tc_htb_xstats stays 20 bytes for a stock class (a
    tc built against the new header must work on older kernels and vice
    versa); a class with an ecn_mode appends struct tc_htb_ecn_xstats at
    offset 24, whose counters the patched tc prints."""
    need_patched_tc()
    lab = lab3(lab_factory, "hx")
    limiter(lab, f"ecn_thresh {K} ecn_mode ece")
    tc("class add dev h3 parent 1: classid 1:20 htb rate 1mbit", lab.sw)
    lens = tool(lab, None, "appstats", "h3", ns=lab.sw)
    assert lens.get("1:20") == 20, lens
    assert lens.get("1:10") == SIZEOF_TC_HTB_ECN_XSTATS, lens
    text = tc("-s class show dev h3", lab.sw)
    for name in ("ecn_ce_marked", "ecn_ece_marked", "rwnd_rewrites"):
        assert name in text, text
        assert find(class_json(lab), name) == 0


@pytest.mark.parametrize("v6", [False, True])
def test_ce_marked_does_not_count_leaf_drops(lab_factory, v6):
    """Defect 4: a packet the leaf drops was not marked on the wire."""
    lab = lab3(lab_factory, "hd6" if v6 else "hd4")
    # 100 kbit/s: the 300 KB burst overflows the leaf's 30 KB as long as
    # the sender (Python, in a loaded guest) sends faster than 14 KB/s
    limiter(lab, f"ecn_thresh {K} ecn_mode ce", rate="100kbit")
    tc("qdisc add dev h3 parent 1:10 handle 10: bfifo limit 30000", lab.sw)
    ce_mib = "Ip6InCEPkts" if v6 else "IpExtInCEPkts"
    ce_in = nstat(lab.ns("h3"), ce_mib)
    sent = tool(lab, "h1", "udpect", lab.ip("h3", v6), 300, *(["-6"] if v6 else []))["sent"]
    # 30 KB drain in 2.4 s at 100 kbit/s
    wait_until(lambda: find(class_json(lab), "qlen") in (0, None), WAIT_S, "the class's queue drained")
    # the last dequeued packet reaches h3 through the veth
    marked, got = settled_ce(lab, ce_mib, ce_in)
    drops = find(class_json(lab), "drops")
    print(f"sent {sent}, drops {drops}, ecn_ce_marked {marked}, CE received {got}")
    assert drops > 0 and got > 0
    assert marked == got, (marked, got)


def settled_ce(lab, ce_mib, ce_in):
    """(ecn_ce_marked, CE packets h3 received since ce_in) once the two
    agree, or as they stand after a few seconds of disagreeing"""
    def both():
        return counter(lab, "ecn_ce_marked"), nstat(lab.ns("h3"), ce_mib) - ce_in
    end = time.monotonic() + scaled(5)
    v = both()
    while v[0] != v[1] and time.monotonic() < end:
        time.sleep(0.1)
        v = both()
    return v


def flows_dump(ns, *args):
    """the flow tables of ns's HTB qdiscs (the "htb-ecn" generic netlink
    family's dump, through htb_tools.py flows) as text"""
    p = subprocess.run(ns_exec(ns) + [sys.executable, TOOLS, "flows", *args],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_failed_configuration_leaves_no_flow_table(lab_factory):
    """Defect 4: a class change that fails after the ece/rwnd checks
    leaves no flow table (nor its dump entry) behind."""
    need_patched_tc()
    lab = lab3(lab_factory, "hf")
    limiter(lab)
    # classid outside the qdisc's major: refused after the ECN checks
    tc_fails(f"class add dev h3 parent 1: classid 2:10 htb rate 1mbit ecn_thresh {K} ecn_mode ece",
             lab.sw)
    assert "dev h3 " not in flows_dump(lab.sw)
    tc(f"class add dev h3 parent 1: classid 1:20 htb rate 1mbit ecn_thresh {K} ecn_mode ece", lab.sw)
    assert "dev h3 " in flows_dump(lab.sw)
    # back to none everywhere: the table goes
    tc("class change dev h3 parent 1: classid 1:20 htb rate 1mbit ecn_mode none", lab.sw)
    assert "dev h3 " not in flows_dump(lab.sw)


@pytest.mark.parametrize("v6", [False, True])
def test_unsolicited_syns_do_not_evict_flows(lab_factory, v6):
    """Defect 3: a storm of SYNs from the network (to addresses and ports
    that do not exist) must not take the entries of managed flows."""
    need_patched_tc()
    lab = lab3(lab_factory, "hy6" if v6 else "hy4")
    sh("sysctl -qw net.ipv4.tcp_ecn=0", ns=lab.ns("h1"))
    # the smallest table the qdisc accepts, so that a storm of 25 times
    # its size is cheap to send from a slow guest
    limiter(lab, f"ecn_thresh {K} ecn_mode rwnd", rate=f"{RWND_RATE_KBIT}kbit",
            qopt=f"ecn_flows {STORM_TABLE}")
    lab.server("h3", 5001, v6=v6, cc=RWND_CC)
    # long enough to outlast the storm and the waits on any host (at 250
    # kbit/s, 40 MB is 1280 s); stopped once checked
    args = [DLTRAFFIC, "flow", "-c", lab.ip("h3", v6), "-p", "5001", "--bytes", "40000000",
            "--cc", RWND_CC, "--id", "f"] + (["-6"] if v6 else [])
    p = lab.spawn("h1", args)
    # the flow is managed before the storm: the limiter rewrites its ACKs
    wait_until(lambda: p.poll() is None and counter(lab, "rwnd_rewrites") > 0,
               WAIT_S, "a window rewrite of the flow before the storm")
    nowhere = "fd00:99::9" if v6 else "10.99.0.9"
    tool(lab, "h3", "synstorm", lab.ip("h3", v6), nowhere, STORM_SYNS, *(["-6"] if v6 else []))
    assert p.poll() is None, "the flow ended before the storm did"
    before = counter(lab, "rwnd_rewrites")
    # and still managed after it: rewrites go on
    after = wait_until(lambda: p.poll() is None and (n := counter(lab, "rwnd_rewrites")) > before and n,
                       WAIT_S, "a window rewrite after the SYN storm (the flow no longer managed?)")
    table = flows_dump(lab.sw)
    assert p.poll() is None
    p.terminate()
    print(f"rwnd_rewrites {before} at the end of the storm, {after} after it")
    print(table)
    assert before > 0
    assert after > before, "the flow was no longer managed after the SYN storm"
    t = table_line(table, "h3")
    assert (t["size"], t["evictions"]) == (str(STORM_TABLE), "0"), t
    mine = [l for l in table.splitlines() if f":5001" in l]
    assert len(mine) == 1 and " wscale unknown" not in mine[0], table


def table_line(text, dev):
    for line in text.splitlines():
        if line.startswith(f"dev {dev} "):
            f = line.split()
            return {f[i]: f[i + 1] for i in range(2, len(f) - 1, 2)}
    raise AssertionError(f"no table of {dev} in {text}")


CGROOT = "/sys/fs/cgroup"


def memcg(name):
    """a memory cgroup (cgroup v2; mounted if the guest has none)"""
    if not os.path.exists(f"{CGROOT}/cgroup.controllers"):
        subprocess.run(["mount", "-t", "cgroup2", "none", CGROOT], check=False)
    try:
        with open(f"{CGROOT}/cgroup.controllers") as f:
            if "memory" not in f.read().split():
                pytest.skip("no memory controller")
    except OSError:
        pytest.skip("no cgroup v2")
    with open(f"{CGROOT}/cgroup.subtree_control", "w") as f:
        f.write("+memory")
    cg = f"{CGROOT}/{name}"
    os.makedirs(cg, exist_ok=True)
    return cg


def test_flow_table_charged_to_the_memcg(lab_factory):
    """The flow table (ecn_flows 2^20 entries, about 84 MiB) and the class
    state are charged to the memory cgroup of the tc that configures them:
    before, a container could pin that much per qdisc outside its limit"""
    need_patched_tc()
    cg = memcg("dcnet-htb-memcg")
    lab = lab3(lab_factory, "hm")

    def into_cg():
        with open(f"{cg}/cgroup.procs", "w") as f:
            f.write(str(os.getpid()))

    def run(args):
        p = subprocess.run([tc_binary(), "-n", lab.sw] + shlex.split(args), preexec_fn=into_cg,
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr

    def current():
        with open(f"{cg}/memory.current") as f:
            return int(f.read())

    try:
        before = current()
        run("qdisc add dev h3 root handle 1: htb default 10 ecn_flows 1048576")
        run(f"class add dev h3 parent 1: classid 1:10 htb rate {RATE_MBIT}mbit ecn_thresh {K}"
            " ecn_mode ece")
        after = current()
        print(f"memory.current {before} -> {after}")
        assert after - before >= 64 << 20, (before, after)
    finally:
        tc("qdisc del dev h3 root", lab.sw, check=False)
        try:
            os.rmdir(cg)
        except OSError:
            pass


def test_flow_table_knobs_dump_and_evictions(lab_factory):
    """Defect 3: the table's size and expiry are knobs, evictions are
    counted, and the user can dump it."""
    need_patched_tc()
    lab = lab3(lab_factory, "hk")
    tc("qdisc add dev h3 root handle 1: htb default 10 ecn_flows 16 ecn_flow_ttl 60s", lab.sw)
    tc(f"class add dev h3 parent 1: classid 1:10 htb rate {RATE_MBIT}mbit ecn_thresh {K} ecn_mode ece",
       lab.sw)
    assert "ecn_flows 16 ecn_flow_ttl 60s" in tc("qdisc show dev h3", lab.sw)
    t = table_line(flows_dump(lab.sw), "h3")
    assert (t["size"], t["ttl_ms"], t["evictions"]) == ("16", "60000", "0"), t
    lab.server("h3", 5001, cc="dctcp")
    p = lab.spawn("h1", [DLTRAFFIC, "bulk", "-c", lab.ip("h3"), "-p", "5001", "--bytes", "2000",
                         "--every-us", "20000", "--count", "24", "--cc", "dctcp"])
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    text = flows_dump(lab.sw)
    t = table_line(text, "h3")
    flows = [l for l in text.splitlines() if l.startswith("  ")]
    print(text)
    # 24 connections through a table of 16: at least 8 evicted, counted
    assert int(t["evictions"]) >= 8, t
    assert int(t["entries"]) == len(flows) <= 16, (t, flows)
    assert all("class 1:10" in l and f"{lab.ip('h3')}:5001" in l for l in flows), flows
    assert "evictions" in tc("-s qdisc show dev h3", lab.sw)


@pytest.mark.parametrize("v6", [False, True])
def test_gso_super_packets(lab_factory, v6):
    """Defect 5: with TSO at the sender and GRO on the limiter's ingress,
    the class holds 64 KB super-packets (the paper's setting).  ce marks
    each as one block and counts its segments, as the receiver sees them;
    ece learns the segment size, not the super-packet's.  Shaped as the
    ECE test is (a 300 KB flow at 1 Mbit/s, beside a kernel build and
    another debug guest on a 2-core host, once never queued beyond K)."""
    lab = lab3(lab_factory, "hg6" if v6 else "hg4")
    sh("ethtool -K eth0 sg on tx on tso on gso on >/dev/null", ns=lab.ns("h1"))
    sh("ethtool -K h1 gro on >/dev/null", ns=lab.sw)
    rate = f"{ECE_RATE_KBIT}kbit"
    limiter(lab, f"ecn_thresh {K} ecn_mode ce", rate=rate)
    ce_mib = "Ip6InCEPkts" if v6 else "IpExtInCEPkts"
    ce_in = nstat(lab.ns("h3"), ce_mib)
    rec, _ = flow(lab, nbytes=ECE_BYTES, v6=v6, sample_ms=0)
    assert rec["bytes"] == ECE_BYTES
    # a marked segment still on its way to h3 (retransmissions after the
    # flow's end) is counted there a moment later
    marked, got = settled_ce(lab, ce_mib, ce_in)
    pkts = find(class_json(lab), "packets")
    print(f"ce: {marked} segments marked, {got} CE received, {pkts} packets through the class")
    assert marked > 0 and marked == got, (marked, got)
    tc(f"class change dev h3 parent 1: classid 1:10 htb rate {rate}"
       f" ceil {rate} ecn_thresh {K} ecn_mode ece", lab.sw)
    ack_action(lab)
    dce = nstat(lab.ns("h1"), "TcpExtTCPDeliveredCE")
    lab.server("h3", 5002, v6=v6, cc="dctcp")
    p = lab.spawn("h1", [DLTRAFFIC, "flow", "-c", lab.ip("h3", v6), "-p", "5002", "--bytes",
                         str(ECE_BYTES), "--cc", "dctcp", "--id", "g"] + (["-6"] if v6 else []))
    # the flow's entry, once the limiter has learnt its segment size
    # (an entry exists before its first data segment, with mss 0: wait for
    # the learnt value, not for the line)
    def mss_of(line):
        m = re.search(r" mss (\d+)", line)
        return int(m.group(1)) if m else 0

    def learnt():
        t = flows_dump(lab.sw)
        return t if any(":5002 " in l and mss_of(l) > 0 for l in t.splitlines()) else None
    table = wait_until(learnt, WAIT_S, "the ece flow's entry (with its mss) in the limiter's table")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert counter(lab, "ecn_ece_marked") > 0
    assert nstat(lab.ns("h1"), "TcpExtTCPDeliveredCE") - dce > 0
    mss = [mss_of(l) for l in table.splitlines() if ":5002 " in l]
    print(table)
    assert mss and all(0 < m <= 1460 for m in mss), table


# the chain of inner classes under which one more class is "too deep":
# 1:1 (level 7) ... 1:8, whose child 1:10 would be a ninth level
DEEP = [f"1:{i}" for i in range(1, 9)]
# failing adds of the class while the ACKs of its old flows arrive
READD_TRIES = 200


def test_failed_class_add_while_old_flows_ack(lab_factory):
    """A class in ece with flows is deleted; its flows' entries stay in the
    table and their ACKs keep arriving.  Adding a class of the same id in
    ece that fails after its state is prepared ("tree is too deep") must
    never show that state to those ACKs: it is freed when the add fails,
    and an ACK that found it would read freed memory (KASAN, which fails
    the run).  Every add fails with a clear error, the ACKs keep crossing
    the action, and the qdisc works afterwards."""
    need_patched_tc()
    lab = lab3(lab_factory, "hr")
    sw = lab.sw
    ecn = f"ecn_thresh {K} ecn_mode ece"
    limiter(lab, ecn=ecn, rate=f"{ECE_RATE_KBIT}kbit")
    # 1:20 in ece keeps the flow table when 1:10 goes
    tc(f"class add dev h3 parent 1: classid 1:20 htb rate 1mbit ceil 1mbit {ecn}", sw)
    parent = "1:"
    for c in DEEP:
        tc(f"class add dev h3 parent {parent} classid {c} htb rate 1mbit", sw)
        parent = c
    tick = lab.spawn("h3", [sys.executable, "-c", TICKER, str(scaled(WAIT_S * 3))])
    assert tick.stdout.readline().strip() == "ready"
    bulk = lab.spawn("h1", [sys.executable, "-c", BULK, lab.ip("h3")])
    try:
        wait_until(lambda: counter(lab, "ecn_acks") > 0, scaled(WAIT_S),
                   "ACKs of 1:10's flows seen")
        tc("class del dev h3 classid 1:10", sw)
        # the flows go on through the direct queue, unshaped: their ACKs
        # find their old entries, of class 1:10
        seen = ack_counters(lab)["seen"]
        with tempfile.NamedTemporaryFile("w", suffix=".tc") as batch:
            for _ in range(READD_TRIES):
                batch.write(f"class add dev h3 parent {DEEP[-1]} classid 1:10 htb"
                            f" rate 1mbit {ecn}\n")
            batch.flush()
            p = subprocess.run(ns_exec(sw) + [tc_binary(), "-force", "-batch", batch.name],
                               capture_output=True, text=True, timeout=scaled(WAIT_S * 5))
        assert p.returncode != 0
        errs = [l for l in p.stderr.splitlines() if l.startswith("Error:")]
        assert len(errs) == READD_TRIES, p.stderr[-2000:]
        assert all("tree is too deep" in l for l in errs), set(errs)
        crossed = ack_counters(lab)["seen"] - seen
        print(f"{READD_TRIES} failed adds of 1:10 in ece; {crossed} segments"
              f" crossed htback meanwhile")
        assert crossed > 0, "no ACK of the old flows arrived during the adds"
        assert tick.poll() is None, "the ticker ended early"
    finally:
        tick.kill()
        bulk.kill()
    out = tc("class show dev h3", sw)
    assert not re.search(r"class htb 1:10 ", out), out
    # nothing was left half applied: the class can be added where it fits,
    # and a flow through it is marked
    tc(f"class add dev h3 parent 1: classid 1:10 htb rate {ECE_RATE_KBIT}kbit"
       f" ceil {ECE_RATE_KBIT}kbit {ecn}", sw)
    rec, _ = flow(lab, nbytes=ECE_BYTES, sample_ms=0)
    assert rec["bytes"] == ECE_BYTES
    assert counter(lab, "ecn_ece_marked") > 0


def test_htb_is_a_module_and_the_feature_works_there(lab_factory):
    """Defect 1: HTB is built as a module (as distributions build it) and
    ece works with it: the ACK side is a tc action module (act_htback),
    not a call from the core into sch_htb."""
    lab = lab3(lab_factory, "hm")
    limiter(lab, f"ecn_thresh {K} ecn_mode ece")
    mods = [l.split()[0] for l in open("/proc/modules").read().splitlines()]
    assert "sch_htb" in mods, "sch_htb is not a loaded module"
    assert "sch_htb_ecn" in mods, "sch_htb_ecn (the flow table) is not a loaded module"
    assert "act_htback" in mods, "act_htback is not a loaded module"
    rec, _ = flow(lab, nbytes=300_000, sample_ms=0)
    assert rec["bytes"] == 300_000
    assert counter(lab, "ecn_ece_marked") > 0


# ------------------------------------------------- the ACK side: htback

def test_without_the_action_no_ack_is_touched(lab_factory):
    """ece and rwnd act on ACKs only through the htback action on the
    device's ingress: without it the class still learns its flows at
    egress and touches no ACK, however long its queue (the core receive
    path has no hook of its own); with it the same flow's ACKs get ECE."""
    need_patched_tc()
    lab = lab3(lab_factory, "ha")
    rate = f"{ECE_RATE_KBIT}kbit"
    limiter(lab, f"ecn_thresh {K} ecn_mode ece", rate=rate, ack=False)
    assert "clsact" not in tc("qdisc show dev h3", lab.sw)
    lab.server("h3", 5001, cc="dctcp")
    p = lab.spawn("h1", [DLTRAFFIC, "flow", "-c", lab.ip("h3"), "-p", "5001", "--bytes",
                         str(ECE_BYTES), "--cc", "dctcp", "--id", "n", "--sample-ms", "100"])
    # egress still learns the flow
    wait_until(lambda: ":5001 " in flows_dump(lab.sw), WAIT_S, "the flow's entry in the table")
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    srtt = [r["srtt_us"] for r in json_lines(out) if r["type"] == "sample"]
    k_us = K * 8 * 1000 / ECE_RATE_KBIT
    marked = counter(lab, "ecn_ece_marked")
    print(f"without the action: max srtt {max(srtt) / 1000:.0f} ms (K is {k_us / 1000:.0f} ms),"
          f" ecn_ece_marked {marked}")
    # no ACK was marked, though the queue went beyond K
    assert marked == 0
    assert max(srtt) > 2 * k_us, srtt
    # with the action, the next flow's ACKs are marked
    ack_action(lab)
    rec, _ = flow(lab, nbytes=ECE_BYTES, server=False, sample_ms=0)
    assert rec["bytes"] == ECE_BYTES
    acts = ack_counters(lab)
    print(f"with the action: ecn_ece_marked {counter(lab, 'ecn_ece_marked')}, action {acts}")
    assert counter(lab, "ecn_ece_marked") > 0
    assert acts["seen"] > 0 and acts["no_htb"] == 0 and acts["no_table"] == 0, acts


def sw_mac(lab, dev):
    return json.loads(sh(f"ip -j link show dev {dev}", ns=lab.sw))[0]["address"]


@pytest.mark.parametrize("v6", [False, True])
def test_action_counts_and_passes_what_it_cannot_use(lab_factory, v6):
    """htback never drops: on a device without HTB (h1, the sender's port)
    it counts no_htb, beside an HTB without ece/rwnd (h3 in ce) no_table,
    and malformed or foreign frames (truncated headers, fragments, IPv6
    extension headers, v4-mapped IPv6, another ethertype) not_tcp, with
    the ece table in place; the flows through both devices complete."""
    need_patched_tc()
    lab = lab3(lab_factory, "hn6" if v6 else "hn4")
    limiter(lab, f"ecn_thresh {K} ecn_mode ce")
    ack_action(lab, "h3")
    ack_action(lab, "h1")
    rec, _ = flow(lab, nbytes=100_000, v6=v6, sample_ms=0)
    assert rec["bytes"] == 100_000
    h1, h3 = ack_counters(lab, "h1"), ack_counters(lab, "h3")
    print(f"h1 (no HTB): {h1}; h3 (HTB in ce): {h3}")
    assert h1["no_htb"] > 0 and h1["seen"] == 0 and h1["no_table"] == 0, h1
    assert h3["no_table"] > 0 and h3["seen"] == 0 and h3["no_htb"] == 0, h3
    assert h1["not_ingress"] == 0 and h3["not_ingress"] == 0

    tc(f"class change dev h3 parent 1: classid 1:10 htb rate {RATE_MBIT}mbit"
       f" ceil {RATE_MBIT}mbit ecn_thresh {K} ecn_mode ece", lab.sw)
    before = ack_counters(lab, "h3")
    sent = tool(lab, "h3", "badframes", "eth0", sw_mac(lab, "h3"))["sent"]
    after = wait_until(lambda: (c := ack_counters(lab, "h3"))["not_tcp"] - before["not_tcp"] >= sent
                       and c, WAIT_S, f"{sent} malformed frames counted as not_tcp")
    print(f"h3 after {sent} malformed frames: {after}")
    # and the device still carries flows, whose ACKs the table now sees
    lab.server("h3", 5002, v6=v6, cc="dctcp")
    args = [DLTRAFFIC, "flow", "-c", lab.ip("h3", v6), "-p", "5002", "--bytes", "100000",
            "--cc", "dctcp", "--id", "g"] + (["-6"] if v6 else [])
    p = lab.spawn("h1", args)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert ack_counters(lab, "h3")["seen"] > after["seen"]


def test_action_bad_attributes_are_refused(lab_factory):
    """The action's dump-only counters, a short TCA_HTBACK_PARMS and an
    unknown attribute are refused with an extack message (sent over raw
    rtnetlink: tc never sends them); an index that exists is refused
    without replace."""
    need_patched_tc()
    lab = lab3(lab_factory, "hx")
    sw = lab.sw
    for args, msg in ((["parms", "5", "seen", "1"], "failed policy validation. (attribute seen)"),
                      (["parms_short", "5"], "size out of range. (attribute parms_short)"),
                      (["parms", "5", "unknown", "1"], "Unknown attribute type. (attribute unknown)"),
                      ([], "TCA_HTBACK_PARMS is missing"),
                      (["noopts"], "the action's options are missing")):
        rc, err = htb_nl(sw, "htback", *args)
        assert rc == 2, (args, err)
        assert msg in err, (args, err)
    assert "htback" not in tc("actions list action htback", sw)
    assert htb_nl(sw, "htback", "parms", "5") == (0, "")
    tc("actions del action htback index 5", sw)
    tc("actions add action htback index 7", sw)
    err = tc_fails("actions add action htback index 7", sw)
    assert "exists" in err or "File exists" in err, err
    tc("actions replace action htback drop index 7", sw)
    out = tc("actions get action htback index 7", sw)
    assert "drop" in out and "index 7" in out, out
    tc("actions del action htback index 7", sw)


def test_flow_dump_admin_only_restartable_lock_free(lab_factory):
    """The flow tables are dumped over generic netlink ("htb-ecn"), per
    namespace, to CAP_NET_ADMIN in the namespace only (the dump names
    every flow): nobody in the initial namespace is refused, and an
    unprivileged user in a namespace of their own sees no table of
    another.  A dump of thousands of flows takes many messages and skbs,
    resuming where each stopped, and lists each flow once.  A reader in a
    loop holds nothing tc takes: tc creates and drops tables meanwhile,
    under lockdep."""
    need_patched_tc()
    lab = lab3(lab_factory, "hd")
    rate = "100mbit"
    # no ACK side: the dump is the egress side's
    # a ttl longer than the test: no entry is reused for age while the
    # storm below runs (that reuse is no eviction, and the count below
    # would come up short on a slow guest)
    qopt = "ecn_flows 16384 ecn_flow_ttl 600s"
    limiter(lab, f"ecn_thresh {K} ecn_mode ece", rate=rate, qopt=qopt, ack=False)

    def as_nobody():
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
    # (the system's python: nobody may not run the venv's, under /root)
    py = "/usr/bin/python3"
    p = subprocess.run([py, TOOLS, "flows"], preexec_fn=as_nobody,
                       capture_output=True, text=True, timeout=120)
    print("nobody:", p.returncode, p.stderr.strip())
    assert p.returncode != 0 and "Operation not permitted" in p.stderr, (p.returncode, p.stderr)
    # root of a user namespace of nobody's: its own namespace, no table
    p = subprocess.run(["unshare", "-Urn", py, TOOLS, "flows"], preexec_fn=as_nobody,
                       capture_output=True, text=True, timeout=120)
    print("nobody's own namespace:", p.returncode, repr(p.stdout), p.stderr.strip())
    assert p.returncode == 0 and p.stdout == "", (p.returncode, p.stdout, p.stderr)

    reader = subprocess.Popen(ns_exec(lab.sw) + ["sh", "-c", f"while :; do {sys.executable} {TOOLS} flows"
                                                  " >/dev/null || exit 1; done"])
    lab.procs.append(reader)
    try:
        for i in range(8):
            tc(f"class change dev h3 parent 1: classid 1:10 htb rate {rate} ecn_mode none", lab.sw)
            tc(f"class change dev h3 parent 1: classid 1:10 htb rate {rate} ecn_thresh {K}"
               " ecn_mode ece", lab.sw)
            if i % 4 == 3:
                tc("qdisc del dev h3 root", lab.sw)
                limiter(lab, f"ecn_thresh {K} ecn_mode ece", rate=rate, qopt=qopt, ack=False)
        assert reader.poll() is None, "the dump failed while tc configured"
    finally:
        reader.terminate()
        reader.wait(timeout=30)
    # 3000 SYNs of distinct 4-tuples through the class: 3000 entries less
    # the evictions of a bucket's fifth
    n = 3000
    sent = tool(lab, "h1", "synstorm", lab.ip("h1"), lab.ip("h3"), n)["sent"]
    assert sent == n
    out = flows_dump(lab.sw, "--stats")
    msgs = json.loads(out.strip().splitlines()[-1])["messages"]
    lines = [l for l in out.splitlines() if l.startswith("  ")]
    t = table_line(out, "h3")
    print(f"{len(lines)} flows in {msgs} messages; {t}")
    assert msgs > 4, msgs
    assert len(set(lines)) == len(lines), "a flow listed twice"
    assert len(lines) + int(t["evictions"]) == n, (len(lines), t)
    assert int(t["entries"]) == len(lines) and t["size"] == "16384", t
    # one device's tables only
    assert flows_dump(lab.sw, "h1") == ""
    assert flows_dump(lab.sw, "h3").count("\n  ") == len(lines)


# --------------------------------------- the ABI of the dump, silent no-ops

TCA_HTB_PARMS, TCA_HTB_INIT, TCA_HTB_DIRECT_QLEN = 1, 2, 5
TCA_HTB_ECN_THRESH, TCA_HTB_ECN_MODE = 10, 11
SIZEOF_TC_HTB_OPT = 44
SIZEOF_TC_HTB_XSTATS = 20
# struct tc_htb_xstats, padding to 8, struct tc_htb_ecn_xstats (6 x u64)
SIZEOF_TC_HTB_ECN_XSTATS = 24 + 6 * 8
ECN_COUNTERS = ("ecn_ce_marked", "ecn_ece_marked", "rwnd_rewrites", "ecn_acks", "rwnd_no_wscale",
                "ecn_accecn_skipped")


def test_stock_config_dumps_as_stock(lab_factory):
    """A stock-only configuration dumps as stock HTB does: a class's
    TCA_OPTIONS is its TCA_HTB_PARMS alone (48 bytes), the qdisc's
    TCA_HTB_INIT and TCA_HTB_DIRECT_QLEN, and the statistics are the 20
    bytes of struct tc_htb_xstats.  A class with an ecn_mode adds its
    threshold and mode to its options and its counters to its statistics
    (struct tc_htb_ecn_xstats), where tc -s prints them."""
    need_patched_tc()
    lab = lab3(lab_factory, "ha")
    limiter(lab)
    tc("class add dev h3 parent 1: classid 1:20 htb rate 1mbit", lab.sw)
    opts = tool(lab, None, "options", "h3", ns=lab.sw)
    print(json.dumps(opts, indent=1))
    for cls in ("class 1:10", "class 1:20"):
        o = opts[cls]
        assert o["attrs"] == [[TCA_HTB_PARMS, SIZEOF_TC_HTB_OPT]], (cls, o)
        assert len(o["hex"]) // 2 == 4 + SIZEOF_TC_HTB_OPT, (cls, o)
        assert o["app"] == SIZEOF_TC_HTB_XSTATS, (cls, o)
    assert [t for t, _ in opts["qdisc 1:0"]["attrs"]] == [TCA_HTB_INIT, TCA_HTB_DIRECT_QLEN], opts
    for name in ECN_COUNTERS:
        assert find(class_json(lab), name) is None, class_json(lab)
    assert "ecn" not in tc("-s class show dev h3", lab.sw)

    tc(f"class change dev h3 parent 1: classid 1:20 htb rate 1mbit ecn_thresh {K} ecn_mode ece",
       lab.sw)
    opts = tool(lab, None, "options", "h3", ns=lab.sw)
    o = opts["class 1:20"]
    assert o["attrs"] == [[TCA_HTB_PARMS, SIZEOF_TC_HTB_OPT], [TCA_HTB_ECN_THRESH, 4],
                          [TCA_HTB_ECN_MODE, 1]], o
    assert o["app"] == SIZEOF_TC_HTB_ECN_XSTATS, o
    # the stock class beside it is untouched
    assert opts["class 1:10"]["attrs"] == [[TCA_HTB_PARMS, SIZEOF_TC_HTB_OPT]], opts
    assert opts["class 1:10"]["app"] == SIZEOF_TC_HTB_XSTATS, opts
    text = tc("-s class show dev h3", lab.sw)
    for name in ECN_COUNTERS:
        assert f" {name}: 0" in text, text
        assert find(class_json(lab, classid="1:20"), name) == 0
    # statistics only: tc class show without -s prints no counter
    assert "ecn_ce_marked" not in tc("class show dev h3", lab.sw)
    # Debian's unpatched tc reads the longer statistics
    out = sh(f"{SYSTEM_TC} -s class show dev h3", ns=lab.sw)
    assert out.count("lended:") == 2, out


def test_rwnd_flow_whose_syn_took_another_class_is_counted(lab_factory):
    """SYNs classified into a class without an ecn_mode (an ACK/SYN
    priority class) leave the flow's window scale unknown, so rwnd cannot
    lower its windows: the ACKs it leaves alone over the threshold are
    counted (rwnd_no_wscale), beside the ACKs of the class's flows seen
    (ecn_acks)."""
    need_patched_tc()
    lab = lab3(lab_factory, "hn")
    sh("sysctl -qw net.ipv4.tcp_ecn=0", ns=lab.ns("h1"))
    rate = f"{RWND_RATE_KBIT}kbit"
    limiter(lab, f"ecn_thresh {K} ecn_mode rwnd", rate=rate)
    tc("class add dev h3 parent 1: classid 1:1 htb rate 10mbit prio 0", lab.sw)
    # IPv4 TCP with the SYN flag (a 20-byte IP header): class 1:1
    tc("filter add dev h3 parent 1: protocol ip prio 1 u32 match ip protocol 6 0xff"
       " match u8 0x02 0x02 at 33 flowid 1:1", lab.sw)
    rec, _ = flow(lab, 150_000, cc=RWND_CC, sample_ms=0)
    assert rec["bytes"] == 150_000
    syn_pkts = find(class_json(lab, classid="1:1"), "packets")
    c = class_json(lab)
    text = tc("-s class show dev h3", lab.sw)
    print(text)
    print(flows_dump(lab.sw))
    assert syn_pkts and syn_pkts >= 1, class_json(lab, classid="1:1")
    assert find(c, "rwnd_rewrites") == 0, c
    assert find(c, "ecn_acks") > 0, c
    assert find(c, "rwnd_no_wscale") > 0, c
    assert "wscale unknown" in flows_dump(lab.sw)


def test_ece_on_ifb_is_accepted_and_its_missing_acks_show(lab_factory):
    """ece/rwnd on an ifb device (ingress shaping): the flows' ACKs never
    reach the device's ingress.  The configuration is accepted (no check
    of the device's kind), and the class's counters show what happens:
    packets through the class, no ACK of its flows seen."""
    need_patched_tc()
    lab = lab3(lab_factory, "hi")
    sw = lab.sw
    if subprocess.run(ns_exec(sw) + ["ip", "link", "add", "ifb0", "type", "ifb"],
                      capture_output=True).returncode != 0:
        pytest.skip("no ifb device in this kernel (CONFIG_IFB)")
    sh("ip link set ifb0 up", ns=sw)
    tc("qdisc add dev ifb0 root handle 1: htb default 10", sw)
    tc(f"class add dev ifb0 parent 1: classid 1:10 htb rate {RATE_MBIT}mbit ecn_thresh {K}"
       " ecn_mode ece", sw)
    ack_action(lab, "ifb0")
    # h1's data, as it arrives on the router, through ifb0
    tc("qdisc add dev h1 handle ffff: ingress", sw)
    tc("filter add dev h1 parent ffff: matchall action mirred egress redirect dev ifb0", sw)
    rec, _ = flow(lab, 100_000, cc="dctcp", sample_ms=0)
    assert rec["bytes"] == 100_000
    c = class_json(lab, dev="ifb0")
    print(tc("-s class show dev ifb0", sw))
    assert find(c, "packets") > 50, c
    assert find(c, "ecn_acks") == 0 and find(c, "ecn_ece_marked") == 0, c


# ------------------------------------------------ fraglist GRO, forwarded

# One connection, DCTCP at both ends: h1 (argv "connect ADDR PORT BYTES
# [-6]") sends BYTES, which the slow class holds, and reads to the end;
# h3 ("serve PORT SECONDS [-6]") sends bulk data for SECONDS, each of its
# segments an ACK of h1's flow.  h3's send buffer is large: a writer that
# waits for room pushes (PSH) its last segment at every wait, and GRO
# chains no segments whose flags differ.
BIDIR = """
import socket, sys, time
v6 = sys.argv[-1] == "-6"
s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"dctcp")
if sys.argv[1] == "serve":
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    s.bind(("::" if v6 else "0.0.0.0", int(sys.argv[2])))
    s.listen(1)
    print("ready", flush=True)
    c, _ = s.accept()
    end = time.monotonic() + float(sys.argv[3])
    sent = 0
    while time.monotonic() < end:
        sent += c.send(b"x" * (1 << 20))
    print(sent, flush=True)
    c.close()
else:
    s.connect((sys.argv[2], int(sys.argv[3])))
    s.sendall(b"y" * int(sys.argv[4]))
    got = 0
    try:
        while True:
            b = s.recv(1 << 16)
            if not b:
                break
            got += len(b)
    except ConnectionResetError:
        pass    # h3 closed with h1's bytes unread: the limiter still holds them
    print(got, flush=True)
"""


def pcap_records(path):
    """(frame length on the wire, captured bytes) of each pcap record"""
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    e = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    off = 24
    while off + 16 <= len(data):
        _, _, incl, orig = struct.unpack(e + "IIII", data[off:off + 16])
        yield orig, data[off + 16:off + 16 + incl]
        off += 16 + incl


def tcp_data(path, sport):
    """Each TCP segment (or GRO packet) with payload from sport: seq,
    payload bytes (from the frame's length on the wire), ECE, whether its
    checksums verify (meaningful when the whole segment was captured)"""
    for orig, frame in pcap_records(path):
        etype = struct.unpack("!H", frame[12:14])[0]
        ip = frame[14:]
        if etype == 0x0800 and ip[9] == 6:
            hl = (ip[0] & 15) * 4
            pseudo = lambda tcp: ip[12:20] + struct.pack("!BBH", 0, 6, len(tcp))
            ip_ok = inet_csum(ip[:hl]) == 0
            tot = struct.unpack("!H", ip[2:4])[0]
        elif etype == 0x86DD and ip[6] == 6:
            hl = 40
            pseudo = lambda tcp: ip[8:40] + struct.pack("!IxxxB", len(tcp), 6)
            ip_ok = True
            tot = 40 + struct.unpack("!H", ip[4:6])[0]
        else:
            continue
        tcp = ip[hl:]
        if struct.unpack("!H", tcp[0:2])[0] != sport:
            continue
        doff = (tcp[12] >> 4) * 4
        plen = orig - 14 - hl - doff
        if plen <= 0:
            continue
        seg = ip[hl:tot] if len(ip) >= tot else None
        yield dict(seq=struct.unpack("!I", tcp[4:8])[0], len=plen, ece=bool(tcp[13] & 0x40),
                   ok=None if seg is None else ip_ok and inet_csum(pseudo(seg) + seg) == 0)


@pytest.mark.parametrize("v6", [False, True])
def test_ece_reaches_every_segment_of_a_fraglist_gro_packet(lab_factory, v6):
    """Fraglist GRO (rx-gro-list) on the limiter's port chains forwarded
    segments, each with its own headers, behind the first (and software
    segmentation on the way out sends each with its own).  An ACK the
    class marks is a chain of h3's data segments, all ACKs of h1's flow:
    every one of them leaves with ECE, with its checksum right, not only
    the first.  The class holds h1's data beyond K while h3 sends bulk
    data back on the same connection; the chains are taken from a capture
    on the limiter's port (as GRO built them, before htback) and matched
    by sequence number with the segments h1 receives."""
    need_patched_tc()
    lab = lab3(lab_factory, "hf6" if v6 else "hf4")
    sw = lab.sw
    # h3 computes its checksums (captures at h1 can verify them) and
    # sends MSS-sized segments (the lab's offloads are off)
    sh("ethtool -K eth0 tx off >/dev/null", ns=lab.ns("h3"))
    sh("ethtool -K h3 gro on rx-gro-list on >/dev/null", ns=sw)
    sh("ethtool -K h1 tx-gso-list off >/dev/null", ns=sw)
    # hold GRO packets over NAPI polls (veth polls a packet at a time when
    # its sender is a process): longer chains
    subprocess.run(["ip", "netns", "exec", sw, "sh", "-c",
                    "echo 2000000 > /sys/class/net/h3/gro_flush_timeout"], check=True, timeout=120)
    limiter(lab, f"ecn_thresh {LOW_K} ecn_mode ece", rate="8kbit")
    # h1's small packets (its SYN, its pure ACKs of h3's data) take a fast
    # class of their own: queued behind h1's data, they would slow h3 to a
    # few segments per round trip of the slow class, too few to chain
    tc("class add dev h3 parent 1: classid 1:20 htb rate 100mbit", sw)
    if v6:
        tc("filter add dev h3 parent 1: protocol ipv6 prio 1 u32 match u16 0 0xff80 at 4"
           " flowid 1:20", sw)
    else:
        tc("filter add dev h3 parent 1: protocol ip prio 1 u32 match u16 0 0xff80 at 2"
           " flowid 1:20", sw)
    out = config.get("DCNET_OUT")
    tag = 6 if v6 else 4
    at_sw = os.path.join(out, f"fraglist-sw-{tag}.pcap")
    at_h1 = os.path.join(out, f"fraglist-h1-{tag}.pcap")
    cap_sw = capture_filter(lab, sw, "h3", at_sw, "tcp and src port 5004")
    cap_h1 = capture_filter(lab, lab.ns("h1"), "eth0", at_h1, "tcp and src port 5004", snaplen=0)
    secs = str(scaled(8))
    srv = lab.spawn("h3", [sys.executable, "-c", BIDIR, "serve", "5004", secs]
                    + (["-6"] if v6 else []))
    assert srv.stdout.readline().strip() == "ready"
    # 20 KB in a class of 8 kbit/s: over K for the whole run
    cli = lab.spawn("h1", [sys.executable, "-c", BIDIR, "connect", lab.ip("h3", v6), "5004",
                           "20000"] + (["-6"] if v6 else []))
    cout, cerr = cli.communicate(timeout=300)
    sout, serr = srv.communicate(timeout=300)
    assert cli.returncode == 0 and srv.returncode == 0, (cerr, serr)
    stop(cap_sw)
    stop(cap_h1)
    marked = counter(lab, "ecn_ece_marked")
    chains = [p for p in tcp_data(at_sw, 5004)]
    segs = {}
    for s in tcp_data(at_h1, 5004):
        segs.setdefault(s["seq"], s)
    mixed = whole = multi = 0
    for c in chains:
        inside, q = [], c["seq"]
        while (q - c["seq"]) % (1 << 32) < c["len"] and q in segs:
            inside.append(segs[q])
            q = (q + segs[q]["len"]) % (1 << 32)
        if len(inside) < 2:
            continue
        multi += 1
        flags = {s["ece"] for s in inside}
        mixed += len(flags) > 1
        whole += flags == {True}
    bad_sum = sum(1 for s in segs.values() if s["ok"] is False)
    ece_segs = sum(1 for s in segs.values() if s["ece"])
    print(f"h1 got {cout.strip()} B, h3 sent {sout.strip()} B; {len(chains)} packets at the"
          f" limiter's port, {multi} of them chains; {marked} ACKs marked; at h1: {len(segs)}"
          f" segments, {ece_segs} with ECE, {bad_sum} bad checksums; chains all ECE {whole},"
          f" partly ECE {mixed}")
    # the premise: fraglist chains were built and marked.  GRO chains
    # only segments that reach the port within one NAPI poll with the same
    # flags; on a loaded host h3 sometimes sends one or two at a time, with
    # PSH on every other one (KUnit htb_ecn_ack_fraglist covers the
    # rewrite itself)
    if not multi:
        pytest.skip(f"no GRO chain formed at the limiter's port ({len(chains)} packets)")
    assert marked > 0
    assert mixed == 0, f"{mixed} of {multi} chains left with ECE on some segments only"
    assert whole > 0
    assert bad_sum == 0


# ------------------------------------------------------------- AccECN

TH_SYN, TH_ACK, TH_ECE, TH_CWR, TH_AE = 0x02, 0x10, 0x40, 0x80, 0x100


def tcp_flags(path, sport):
    """the 9 TCP flags of each segment from sport in a pcap"""
    for ip, etype in pcap_packets(path):
        if etype == 0x0800 and ip[9] == 6:
            tcp = ip[(ip[0] & 15) * 4:]
        elif etype == 0x86DD and ip[6] == 6:
            tcp = ip[40:]
        else:
            continue
        if len(tcp) >= 14 and struct.unpack("!H", tcp[0:2])[0] == sport:
            yield (tcp[12] & 1) << 8 | tcp[13]


@pytest.mark.parametrize("v6", [False, True])
def test_ece_leaves_accecn_flows_alone(lab_factory, v6):
    """On a flow that negotiated Accurate ECN (its SYN with AE, CWR and
    ECE, the SYN-ACK with one of AccECN's answers) ECE is one bit of the
    ACE counter of CE marks: ece does not set it there, and counts the
    ACKs it left (ecn_accecn_skipped), while a classic ECN flow through
    the same class gets ECE.  Both handshakes and segments are crafted
    (raw sockets, checksum 0: the end hosts drop them unanswered), the
    data of both queued in the class beyond K when h3's ACKs come back."""
    need_patched_tc()
    lab = lab3(lab_factory, "hx6" if v6 else "hx4")
    # slow: the data stays queued while each tool starts (seconds in a
    # debug guest beside others)
    limiter(lab, f"ecn_thresh {LOW_K} ecn_mode ece", rate="1kbit")
    out = config.get("DCNET_OUT")
    pcap = os.path.join(out, f"accecn-{6 if v6 else 4}.pcap")
    cap = capture_filter(lab, lab.ns("h1"), "eth0", pcap, "tcp and (src port 5005 or src port 5006)")
    h1, h3 = lab.ip("h1", v6), lab.ip("h3", v6)
    v = ["-6"] if v6 else []
    isn, risn, n, mss = 1000, 5000, 10, 1000
    # port 5005: classic ECN (SYN: ECE CWR; SYN-ACK: ECE); 5006: AccECN
    # (SYN: AE CWR ECE; SYN-ACK: CWR, AccECN's answer to a not-ECT SYN)
    hs = {5005: (TH_SYN | TH_ECE | TH_CWR, TH_SYN | TH_ACK | TH_ECE),
          5006: (TH_SYN | TH_AE | TH_CWR | TH_ECE, TH_SYN | TH_ACK | TH_CWR)}
    for port, (syn, synack) in hs.items():
        sport = port + 35000
        tool(lab, "h1", "tcpraw", h1, h3, sport, port, isn, 0, syn, 1, *v)
        tool(lab, "h3", "tcpraw", h3, h1, port, sport, risn, isn + 1, synack, 1, *v)
    # data, ECT(0), queued beyond K (2 x 10 KB at 1 kbit/s: 160 s)
    for port in hs:
        tool(lab, "h1", "tcpraw", h1, h3, port + 35000, port, isn + 1, risn + 1, TH_ACK, n, mss,
             2, *v)
    assert find(class_json(lab), "backlog") > LOW_K
    # (the backlog, checked again after the ACKs, only falls meanwhile)
    for port in hs:
        tool(lab, "h3", "tcpraw", h3, h1, port, port + 35000, risn + 1, isn + 1 + mss, TH_ACK, 3,
             *v)
    assert find(class_json(lab), "backlog") > LOW_K
    # tcpdump hands over a block of packets when it fills or times out:
    # give the last ones time before it is stopped
    time.sleep(2)
    stop(cap)
    acks = {p: [f for f in tcp_flags(pcap, p) if not f & TH_SYN] for p in hs}
    print(f"ACK flags at h1: classic {[hex(f) for f in acks[5005]]},"
          f" AccECN {[hex(f) for f in acks[5006]]}; {class_json(lab)}")
    assert len(acks[5005]) == 3 and len(acks[5006]) == 3, acks
    # the class marks: a classic flow's ACKs get ECE
    assert all(f & TH_ECE for f in acks[5005]), acks
    # an AccECN flow's ACE counter is left alone
    assert not any(f & TH_ECE for f in acks[5006]), acks
    assert counter(lab, "ecn_ece_marked") == 3
    assert counter(lab, "ecn_accecn_skipped") == 3
