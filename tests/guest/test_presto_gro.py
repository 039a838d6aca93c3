"""Presto GRO (net/core/presto_gro.c) in the booted kernel.

The receiver is a veth end in the initial namespace (configured and read
over the generic netlink family presto-gro, dcnet/prestogro.py) with GRO on;
its peer sits in a middle namespace.  Crafted TCP segments, injected there
with AF_PACKET, drive single branches of Algorithm 1 (a loss inside a
flowcell, a gap at a flowcell boundary that only the timer releases).  A
real TCP connection from a sender namespace through tests/guest/
presto_relay.py, which stamps flowcell IDs into source MACs and delays
every other flowcell, shows what TCP sees: with Presto GRO no segment
reaches TCP's out-of-order queue, with stock GRO many do.  IPv4 and IPv6.
"""
import ctypes
import fcntl
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest

from dcnet import config
from dcnet.prestogro import NetlinkError, PrestoGro, flat
from dcnet.wait import wait_until
from pktutil import inet_csum

HERE = os.path.dirname(os.path.abspath(__file__))
RX = "pgr0"
# the generic netlink socket of the tests, in the initial namespace
PG = PrestoGro()
NS_S, NS_M = "pgs", "pgm"
A4 = ("10.77.0.1", "10.77.0.2")
A6 = ("fd77::1", "fd77::2")
PORT = 7300


def sh(cmd, ns=None):
    argv = (["nsenter", f"--net=/run/netns/{ns}", "--"] if ns else []) + ["sh", "-c", cmd]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, f"{cmd}: {p.stderr}"
    return p.stdout


def knob(name, value=None, dev=RX):
    """a setting or counter of dev; with value, set the setting"""
    if value is None:
        return flat(PG.get(dev))[name]
    PG.set(dev, **{name: value})


def counters():
    return {n: knob(n) for n in ("held", "pushed_inorder", "pushed_timeout",
                                 "pushed_loss", "pushed_old", "pushed_evicted",
                                 "reorder_events", "late_fills", "untagged",
                                 "restarts", "expired", "ewma_us", "dropped")}


def ofo():
    out = subprocess.run(["nstat", "-asz", "TcpExtTCPOFOQueue"], capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "TcpExtTCPOFOQueue":
            return int(f[1])
    return 0


@pytest.fixture(scope="module")
def lab_once():
    """sender ns pgs (eth0) -- pgm (m1 | relay | m2) -- pgr0 (init ns)"""
    for ns in (NS_S, NS_M):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    subprocess.run(["ip", "link", "del", RX], capture_output=True)
    sh(f"ip netns add {NS_S} && ip netns add {NS_M}")
    sh(f"ip link add eth0 netns {NS_S} type veth peer name m1 netns {NS_M}")
    # one queue each way, as RSS keeps a flow on one queue of a NIC (the
    # relay may run on either vCPU and AF_PACKET picks the queue by CPU)
    sh(f"ip link add {RX} numtxqueues 1 numrxqueues 1 type veth peer name m2 "
       f"netns {NS_M} numtxqueues 1 numrxqueues 1")
    sh(f"ip addr add {A4[0]}/24 dev eth0 && ip addr add {A6[0]}/64 dev eth0 nodad && "
       "ip link set eth0 up && ip link set lo up && "
       # checksums complete in the frames the relay reads; MTU segments
       "ethtool -K eth0 tx off tso off gso off >/dev/null", ns=NS_S)
    # veth NAPI GRO at pgr0 needs TSO off on the sending end (m2)
    sh("ip link set m1 up && ip link set m2 up && "
       "ethtool -K m1 gro off >/dev/null && ethtool -K m2 tso off gso off >/dev/null",
       ns=NS_M)
    # The sender transmits from both vCPUs (its process, and softirq when
    # an ACK arrives), and without NAPI a veth hands each frame to the
    # backlog of the CPU that sent it: the two backlogs can deliver m1's
    # frames to the relay swapped, a gap inside a flowcell before the
    # "fabric" (seen in an IPv6 run: two segments swapped at the relay's
    # input, Presto GRO pushed_loss 1, TCP 2 out of order).  RPS steers
    # all of m1's frames to CPU 0's backlog, in the order they were sent.
    subprocess.run(["ip", "netns", "exec", NS_M, "sh", "-c",
                    "for q in /sys/class/net/m1/queues/rx-*; do echo 1 > $q/rps_cpus; done"],
                   check=True, capture_output=True, timeout=60)
    sh(f"ip addr add {A4[1]}/24 dev {RX} && ip addr add {A6[1]}/64 dev {RX} nodad && "
       # the relay reads the receiver's ACKs too: complete checksums
       f"ip link set {RX} up && ethtool -K {RX} gro on tx off >/dev/null")
    yield
    subprocess.run(["ip", "link", "del", RX], capture_output=True)
    for ns in (NS_S, NS_M):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@pytest.fixture
def lab(lab_once):
    """the module's lab, Presto GRO off with default knobs; yields the
    counters at the start (they only grow: tests look at differences)"""
    knob("enabled", 0)
    for name, v in (("alpha", 2), ("beta", 2), ("timeout_min_us", 100),
                    ("timeout_max_us", 10000), ("max_segs", 128), ("max_bytes", 8 << 20)):
        knob(name, v)
    yield counters()
    knob("enabled", 0)


def delta(c0):
    c = counters()
    return {k: (c[k] - c0[k] if k != "ewma_us" else c[k]) for k in c}


# --- crafted segments -------------------------------------------------------

STAMP_TAG = 0xfcce          # OVS_FLOWCELL_STAMP_TAG: source MAC bytes 2-3


def segment(v6, fc, seq, length, dst_mac, tagged=True, sport=40000):
    """a TCP data segment of flowcell fc as Presto's sender stamps it (or,
    untagged, a frame whose source MAC bytes 4-5 happen to read fc)"""
    src_mac = bytes([0x02, 0x70]) + struct.pack("!HH", STAMP_TAG if tagged else 0x7265, fc)
    payload = b"x" * length
    tcp = struct.pack("!HHIIBBHHH", sport, PORT, seq, 1, 5 << 4, 0x10, 65535, 0, 0) + payload
    if v6:
        s, d = socket.inet_pton(socket.AF_INET6, A6[0]), socket.inet_pton(socket.AF_INET6, A6[1])
        pseudo = s + d + struct.pack("!IxxxB", len(tcp), 6)
        tcp = tcp[:16] + struct.pack("!H", inet_csum(pseudo + tcp)) + tcp[18:]
        ip = struct.pack("!IHBB", 6 << 28, len(tcp), 6, 64) + s + d
        et = 0x86DD
    else:
        s, d = socket.inet_aton(A4[0]), socket.inet_aton(A4[1])
        pseudo = s + d + struct.pack("!xBH", 6, len(tcp))
        tcp = tcp[:16] + struct.pack("!H", inet_csum(pseudo + tcp)) + tcp[18:]
        ip = struct.pack("!BBHHHBBH", 0x45, 0, 20 + len(tcp), 1, 0x4000, 64, 6, 0) + s + d
        ip = ip[:10] + struct.pack("!H", inet_csum(ip)) + ip[12:]
        et = 0x0800
    return dst_mac + src_mac + struct.pack("!H", et) + ip + tcp


# Sends the frames from the middle namespace, then reads the counters at
# once over a netlink socket opened in the initial one: what happened on
# arrival, before any timer.
INJECT = r"""
import ctypes, json, os, socket, sys, time
from dcnet.prestogro import PrestoGro, flat
pg = PrestoGro()
libc = ctypes.CDLL(None, use_errno=True)
if libc.setns(os.open("/run/netns/" + sys.argv[1], os.O_RDONLY), 0x40000000):
    sys.exit("setns: " + os.strerror(ctypes.get_errno()))
names = ("held", "pushed_inorder", "pushed_timeout", "pushed_loss", "pushed_old",
         "reorder_events", "restarts", "untagged")
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("m2", 0))
t0 = time.monotonic()
for h in sys.argv[3:]:
    s.send(bytes.fromhex(h))
st = flat(pg.get(int(sys.argv[2])))
c = {n: st[n] for n in names}
c["elapsed"] = time.monotonic() - t0
print(json.dumps(c))
"""


def inject(frames, c0):
    """counters right after the frames went out (differences to c0)"""
    p = subprocess.run([sys.executable, "-c", INJECT, NS_M, str(socket.if_nametoindex(RX))]
                       + [f.hex() for f in frames],
                       check=True, timeout=60, capture_output=True, text=True)
    c = json.loads(p.stdout)
    return {k: (v - c0[k] if k in c0 else v) for k, v in c.items()}


def rx_mac():
    with open(f"/sys/class/net/{RX}/address") as f:
        return bytes.fromhex(f.read().strip().replace(":", ""))


def test_knobs_defaults_and_refusals(lab_once):
    # first test of the module: the device was never configured
    assert knob("enabled") == 0, "Presto GRO must be off by default"
    assert (knob("alpha"), knob("beta")) == (2, 2), "the paper's alpha = beta = 2"
    assert knob("max_bytes") == 8 << 20 and knob("held_bytes") == 0
    assert all(v == 0 for v in counters().values())
    for name, bad in (("enabled", 2), ("alpha", 0), ("beta", 0), ("max_segs", 0),
                      ("max_bytes", 4095), ("max_bytes", (256 << 20) + 1)):
        with pytest.raises(OSError):
            knob(name, bad)
    # bad configuration gets a clear error (netlink extack), and changes nothing
    with pytest.raises(NetlinkError, match="timeout-min-us above timeout-max-us"):
        PG.set(RX, timeout_min_us=20000, timeout_max_us=10000)
    assert (knob("timeout_min_us"), knob("timeout_max_us")) == (100, 10000)
    with pytest.raises(NetlinkError) as e:
        PG.set(1 << 30, enabled=1)
    assert e.value.errno == 19, e.value        # ENODEV
    # the counters are read-only: a set carrying them is refused
    from dcnet import prestogro
    with pytest.raises(NetlinkError):
        PG._request(PG.family, prestogro.CMD_DEV_SET, prestogro.NLM_F_ACK,
                    prestogro._attr(prestogro.A_IFINDEX, struct.pack("I", socket.if_nametoindex(RX)))
                    + prestogro._attr(prestogro.A_STATS, b""))
    # a dump lists every device of the namespace
    assert socket.if_nametoindex(RX) in {x["ifindex"] for x in PG.dump()}
    knob("enabled", 1)
    assert knob("enabled") == 1
    knob("alpha", 3)
    assert knob("alpha") == 3
    knob("enabled", 0)
    assert knob("enabled") == 0
    knob("alpha", 2)


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_loss_inside_flowcell_goes_up_at_once(lab, v6):
    PG.set(RX, timeout_min_us=500000, timeout_max_us=500000)
    knob("enabled", 1)
    mac = rx_mac()
    # flowcell 7: 1000..1100, then (1100..1200 lost) 1200..1300
    c = inject([segment(v6, 7, 1000, 100, mac), segment(v6, 7, 1200, 100, mac)], lab)
    assert c["pushed_loss"] == 1, c
    assert c["held"] == 0 and c["pushed_timeout"] == 0, c
    assert c["pushed_inorder"] == 1, c


def tcp_in_segs():
    """Tcp InSegs (IPv4 and IPv6): segments that reached TCP"""
    with open("/proc/net/snmp") as f:
        rows = [line.split() for line in f if line.startswith("Tcp:")]
    return int(rows[1][rows[0].index("InSegs")])


@pytest.fixture
def threaded(request):
    """the receiver's NAPI in a kthread (threaded NAPI) for the test"""
    path = f"/sys/class/net/{RX}/threaded"
    with open(path, "w") as f:
        f.write("1" if request.param else "0")
    yield request.param
    with open(path, "w") as f:
        f.write("0")


@pytest.mark.parametrize("v6,threaded", [(False, False), (True, False), (False, True)],
                         ids=["ipv4", "ipv6", "ipv4-threaded"], indirect=["threaded"])
def test_timer_releases_a_segment_held_at_a_boundary(lab, v6, threaded):
    """A segment held at a flowcell boundary goes up when its hold ends,
    with no packet to trigger it: the hold timer schedules the NAPI, whose
    poll delivers it (softirq, or the NAPI's kthread when threaded).  The
    segment reaches TCP (Tcp InSegs), not only the counters.  The hold is
    1 s (EWMA is 0, the clamp rules), long enough for one injection and
    the counters' read in a loaded debug guest (300 ms was not: 0.33-0.36 s
    went by)."""
    PG.set(RX, timeout_min_us=1000000, timeout_max_us=1000000)
    knob("enabled", 1)
    mac = rx_mac()
    segs0 = tcp_in_segs()
    # flowcell 1: 1000..1100; flowcell 2 starts at 1300: a gap at the boundary
    c = inject([segment(v6, 1, 1000, 100, mac), segment(v6, 2, 1300, 100, mac)], lab)
    assert c["elapsed"] < 1.0, c
    if threaded:
        # the NAPI's kthread may not have run yet when inject() reads
        wait_until(lambda: delta(lab)["held"] + delta(lab)["pushed_timeout"] >= 1, 5,
                   "the NAPI's kthread saw the segments")
        c = delta(lab)
    else:
        assert c["pushed_timeout"] == 0, c
    assert c["held"] == 1, c
    # no packet arrives any more: only the timer, through the NAPI, releases it
    deadline = time.monotonic() + 5
    while delta(lab)["pushed_timeout"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    c = delta(lab)
    assert c["pushed_timeout"] == 1, c
    assert knob("held_bytes") == 0
    # both segments reached TCP (no socket: each is answered with a RST)
    wait_until(lambda: tcp_in_segs() - segs0 >= 2, 5, "the held segment reaches TCP")
    assert c["reorder_events"] == 0 and c["ewma_us"] == lab["ewma_us"], \
        "a timeout is not a reordering sample"
    assert c["dropped"] == 0, c


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_restarted_ids_still_resequenced(lab, v6):
    """The sender's IDs restart at 0 (its state for the flow was evicted or
    expired) while the receiver's last flowcell is 500: flowcell 1 of the
    new run, ahead of flowcell 0, waits at the gap as the next flowcell,
    and flowcell 0 fills it; nothing is pushed up as old.  One injection
    (a process start is seconds in the debug guest under load) within a
    1 s hold."""
    PG.set(RX, timeout_min_us=1000000, timeout_max_us=1000000)
    knob("enabled", 1)
    mac = rx_mac()
    c = inject([segment(v6, 500, 1000, 100, mac), segment(v6, 1, 1300, 100, mac),
                segment(v6, 0, 1100, 200, mac)], lab)
    assert c["elapsed"] < 1.0, c
    assert c["restarts"] == 1 and c["held"] == 1, c
    assert c["pushed_old"] == 0 and c["pushed_timeout"] == 0, c
    assert c["reorder_events"] == 1 and c["pushed_inorder"] == 3, c


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_untagged_frames_are_no_flowcell(lab, v6):
    """A data frame without the stamp (the sender fell back) carries no ID:
    in sequence it goes up; at a gap it is a loss inside the current
    flowcell, pushed at once, not an old flowcell nor a boundary hold."""
    PG.set(RX, timeout_min_us=300000, timeout_max_us=300000)
    knob("enabled", 1)
    mac = rx_mac()
    c = inject([segment(v6, 7, 1000, 100, mac),
                segment(v6, 1, 1100, 100, mac, tagged=False),
                segment(v6, 9, 1300, 100, mac, tagged=False)], lab)
    assert c["untagged"] == 2, c
    assert c["pushed_inorder"] == 2 and c["pushed_loss"] == 1, c
    assert c["held"] == 0 and c["pushed_old"] == 0, c


def test_held_bytes_bounded_per_napi(lab):
    """max_bytes bounds what each NAPI instance holds (skb truesize) over
    all its flows (pgr0 has one): eight flows each with a segment at a
    boundary gap, against 4096 bytes; a flow whose segment would pass the
    bound goes up at once (pushed_evicted), and held_bytes never exceeds
    it.  Turning Presto GRO off frees what is held (dropped)."""
    PG.set(RX, timeout_min_us=300000, timeout_max_us=300000)
    knob("max_bytes", 4096)
    knob("enabled", 1)
    mac = rx_mac()
    frames = []
    for k in range(8):
        frames += [segment(False, 1, 1000, 100, mac, sport=41000 + k),
                   segment(False, 2, 1300, 100, mac, sport=41000 + k)]
    inject(frames, lab)
    c = delta(lab)
    assert 0 <= knob("held_bytes") <= 4096, c
    assert c["pushed_evicted"] >= 1, c
    assert c["held"] >= 1, c
    knob("enabled", 0)
    assert knob("held_bytes") == 0 and knob("flows") == 0


def operstate(dev):
    with open(f"/sys/class/net/{dev}/operstate") as f:
        return f.read().strip()


def set_up(dev, up):
    """ip link set dev up/down, without starting a process (SIOCSIFFLAGS)"""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifr = fcntl.ioctl(s, 0x8913, struct.pack("16sH22x", dev.encode(), 0))  # SIOCGIFFLAGS
        flags = struct.unpack_from("16sH", ifr)[1]
        flags = flags | 1 if up else flags & ~1                                  # IFF_UP
        fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", dev.encode(), flags))     # SIOCSIFFLAGS


def set_gro(dev, on):
    """ethtool -K dev gro on/off, without starting a process (ETHTOOL_SGRO)"""
    ev = ctypes.create_string_buffer(struct.pack("II", 0x2c, 1 if on else 0))
    ifr = struct.pack("16sP", dev.encode(), ctypes.addressof(ev)).ljust(40, b"\0")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        fcntl.ioctl(s, 0x8946, ifr)                                              # SIOCETHTOOL


def test_held_segments_at_teardown(lab_once):
    """What a NAPI holds is dropped with it, never delivered from outside
    the NAPI: a device that goes down (veth deletes its NAPI) drops what
    it holds (dropped, not pushed_evicted); so does GRO turned off while
    up (the NAPI goes, the device stays); held again, the device is
    deleted: with KASAN and lockdep, no splat."""
    dev, peer = "pgd0", "pgd1"
    subprocess.run(["ip", "link", "del", dev], capture_output=True)
    sh(f"ip link add {dev} numtxqueues 1 numrxqueues 1 type veth peer name {peer} "
       f"numtxqueues 1 numrxqueues 1 && ethtool -K {peer} tso off gso off >/dev/null && "
       f"ip link set {peer} up && ip link set {dev} up && "
       f"ethtool -K {dev} gro on tx off >/dev/null")
    ifindex = socket.if_nametoindex(dev)

    def get(name):
        return knob(name, dev=dev)

    try:
        # 1 s: only teardown releases the hold
        PG.set(dev, timeout_min_us=1000000, timeout_max_us=1000000, enabled=1)
        with open(f"/sys/class/net/{dev}/address") as f:
            mac = bytes.fromhex(f.read().strip().replace(":", ""))
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((peer, 0))

        def hold(sport):
            """a new flow (a device going down keeps its flows' state)"""
            held = get("held")
            for fr in (segment(False, 1, 1000, 100, mac, sport=sport),
                       segment(False, 2, 1300, 100, mac, sport=sport)):
                s.send(fr)
            wait_until(lambda: get("held") > held, 5, "a segment is held at the boundary")

        hold(42001)
        evicted, dropped = get("pushed_evicted"), get("dropped")
        set_up(dev, False)              # in-process: well within the 1 s hold
        assert get("pushed_timeout") == 0, "the hold timed out before the device went down"
        assert get("dropped") == dropped + 1
        assert get("pushed_evicted") == evicted and get("held_bytes") == 0
        set_up(dev, True)
        # the carrier comes back through linkwatch's work item, which
        # activates the peer's qdisc after the ioctl returns: until then
        # the peer's noop qdisc drops what is sent (silently, for
        # AF_PACKET), and the hold below waited for frames that never left
        wait_until(lambda: all(operstate(x) == "up" for x in (dev, peer)), 5,
                   f"{dev} and {peer} are up again")
        hold(42002)
        dropped = get("dropped")
        # GRO off: veth deletes the NAPI, the device stays up
        set_gro(dev, False)             # in-process, as set_up()
        assert get("pushed_timeout") == 0, "the hold timed out before GRO went off"
        assert get("dropped") == dropped + 1 and get("held_bytes") == 0
        assert get("flows") == 0
        set_gro(dev, True)
        hold(42003)
        s.close()
    finally:
        subprocess.run(["ip", "link", "del", dev], capture_output=True)
    with pytest.raises(NetlinkError) as e:
        PG.get(ifindex)
    assert e.value.errno == 19, e.value        # ENODEV: the device and its state are gone


def test_only_the_enabled_devices_napis_are_marked(lab_once):
    """The receive path of a device without Presto GRO stays stock while
    another device has it on: only the enabled device's NAPI instances
    carry NAPI_STATE_PRESTO_GRO (dev-get's napis), including NAPIs the
    device adds after it was enabled (veth deletes and re-adds its NAPIs
    when GRO goes off and on), and none once it is turned off."""
    pairs = (("pgn0", "pgn1"), ("pgo0", "pgo1"))
    for dev, peer in pairs:
        subprocess.run(["ip", "link", "del", dev], capture_output=True)
        sh(f"ip link add {dev} numtxqueues 2 numrxqueues 2 type veth peer name {peer} "
           f"numtxqueues 1 numrxqueues 1 && ethtool -K {peer} tso off gso off >/dev/null && "
           f"ip link set {peer} up && ip link set {dev} up && ethtool -K {dev} gro on tx off >/dev/null")
    dev, other = "pgn0", "pgo0"

    def napis(d):
        return PG.get(d)["napis"]

    try:
        assert (napis(dev), napis(other)) == (0, 0)
        PG.set(dev, enabled=1)
        assert (napis(dev), napis(other)) == (2, 0), "both rx queues' NAPIs, and no other device's"
        set_gro(dev, False)                     # veth deletes its NAPIs
        assert napis(dev) == 0
        set_gro(dev, True)                      # and adds new ones: marked when added
        assert (napis(dev), napis(other)) == (2, 0)
        # the new NAPI's segments reach Presto GRO
        with open(f"/sys/class/net/{dev}/address") as f:
            mac = bytes.fromhex(f.read().strip().replace(":", ""))
        before = flat(PG.get(dev))
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
            s.bind(("pgn1", 0))
            s.send(segment(False, 1, 1000, 100, mac, sport=42101))
        wait_until(lambda: sum(flat(PG.get(dev))[k] - before[k] for k in ("pushed_inorder", "held")) > 0,
                   5, "the segment went through Presto GRO")
        assert flat(PG.get(other))["pushed_inorder"] == 0
        PG.set(dev, enabled=0)
        assert (napis(dev), napis(other)) == (0, 0)
        PG.set(dev, enabled=1)
        assert napis(dev) == 2
    finally:
        for d, _ in pairs:
            subprocess.run(["ip", "link", "del", d], capture_output=True)


# --- a real connection through the relay --------------------------------------

OUT = (config.get("DCNET_OUT") or "/tmp")


def transfer(v6, nbytes, mode, delay_ms=10, tag="x"):
    relay = subprocess.Popen(["nsenter", f"--net=/run/netns/{NS_M}", "--", sys.executable,
                              os.path.join(HERE, "presto_relay.py"), "m1", "m2",
                              "--mode", mode, "--delay-ms", str(delay_ms),
                              "--log", os.path.join(OUT, f"presto-gro-relay-{tag}.log")],
                             stdout=subprocess.PIPE, text=True)
    assert relay.stdout.readline().strip() == "ready"
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    dst = A6[1] if v6 else A4[1]
    srv = socket.socket(fam, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((dst, PORT))
    srv.listen(1)
    got = []

    def serve():
        c, _ = srv.accept()
        n = 0
        while True:
            b = c.recv(1 << 16)
            if not b:
                break
            n += len(b)
        got.append(n)
        c.close()

    th = threading.Thread(target=serve)
    th.start()
    ofo0 = ofo()
    send = ("import socket,sys\n"
            f"s=socket.create_connection(('{dst}',{PORT}))\n"
            f"s.sendall(b'p'*{nbytes})\ns.close()\n")
    subprocess.run(["nsenter", f"--net=/run/netns/{NS_S}", "--", sys.executable, "-c", send],
                   check=True, timeout=90)
    th.join(90)
    srv.close()
    relay.terminate()
    st = json.loads(relay.communicate(timeout=30)[0].strip().splitlines()[-1])
    with open(os.path.join(OUT, f"presto-gro-links-{tag}.txt"), "w") as f:
        f.write(sh(f"ip -s -s link show {RX}") + sh("ip -s -s link", ns=NS_M)
                + sh("ip -s -s link show eth0", ns=NS_S))
    assert got == [nbytes]
    return ofo() - ofo0, st


@pytest.mark.parametrize("v6", [False, pytest.param(True, marks=pytest.mark.xfail(
    reason="open: in IPv6 runs Presto GRO saw one gap inside a flowcell (pushed_loss 1) "
           "and TCP 2 out-of-order segments (stock: 16); docs/presto.md", strict=False))],
    ids=["ipv4", "ipv6"])
def test_swapped_flowcells_hidden_from_tcp(lab, v6):
    nbytes = 16 * 65536
    # stock GRO: the fast path's flowcells overtake the slow one's
    fam = "v6" if v6 else "v4"
    off, st0 = transfer(v6, nbytes, "reorder", tag=f"{fam}-stock")
    assert st0["delayed"] > 0 and st0["cells"] >= 16 and st0["socket_drops"] == 0, st0
    assert off > 0, "stock GRO should expose the reordering to TCP"
    # above the relay's 10 ms delay and its jitter
    PG.set(RX, timeout_min_us=200000, timeout_max_us=400000)
    knob("enabled", 1)
    on, st = transfer(v6, nbytes, "reorder", tag=f"{fam}-presto")
    c = delta(lab)
    with open(os.path.join((config.get("DCNET_OUT") or "/tmp"), "presto-gro-measured.jsonl"),
              "a") as f:
        # the sender's repathing (a new flow label in IPv6): RTOs and
        # duplicate data make TCP pick a new hash
        rehash = sh("nstat -asz TcpExtTcpTimeoutRehash TcpExtTcpDuplicateDataRehash "
                    "TcpExtTCPTimeouts", ns=NS_S)
        f.write(json.dumps({"v6": v6, "ofo_stock": off, "ofo_presto": on,
                            "relay_stock": st0, "relay": st, "counters": c,
                            "sender_nstat": rehash.split("\n")}) + "\n")
    assert st["delayed"] > 0 and st["socket_drops"] == 0, st
    assert c["held"] > 0 and c["reorder_events"] > 0, c
    assert c["pushed_timeout"] == 0 and c["pushed_loss"] == 0, c
    assert on == 0, f"TCP queued {on} segments out of order with Presto GRO ({c})"
    assert c["ewma_us"] > 0, c


def test_user_namespace_cannot_raise_held_memory():
    """Root of a user namespace that owns a device's network namespace may
    configure Presto GRO there, lower its limits and set them back to the
    defaults, but not raise max_segs or timeout_max_us above the defaults:
    those bound the memory a peer can pin (EPERM)."""
    # the initial namespace's admin may raise them
    sh("ip link add pgu2 type veth peer name pgu3")
    try:
        PG.set("pgu2", max_segs=256, timeout_max_us=20000)
        assert (knob("max_segs", dev="pgu2"), knob("timeout_max_us", dev="pgu2")) == (256, 20000)
    finally:
        sh("ip link del pgu2")
    # one Python process in the user namespace (a process start costs
    # seconds in a loaded debug guest)
    prog = r"""
import json, subprocess
from dcnet.prestogro import NetlinkError, PrestoGro
subprocess.run(["ip", "link", "add", "pgu0", "type", "veth", "peer", "name", "pgu1"], check=True)
pg = PrestoGro()
lines, errs = [], []
for k, v in (("enabled", 1), ("alpha", 3), ("max_segs", 64), ("max_segs", 128), ("max_segs", 129),
             ("timeout_max_us", 5000), ("timeout_max_us", 10000), ("timeout_max_us", 10001)):
    try:
        pg.set("pgu0", **{k: v})
        lines.append(f"{k}={v} ok")
    except NetlinkError as e:
        lines.append(f"{k}={v} refused")
        errs.append(str(e))
d = pg.get("pgu0")
print(json.dumps(dict(lines=lines, errs=errs, max_segs=d["max_segs"], tmax=d["timeout_max_us"])))
"""
    p = subprocess.run(["unshare", "-Urn", sys.executable, "-c", prog], capture_output=True,
                       text=True, timeout=120 * config.get("DCNET_TIMEOUT_SCALE"))
    if p.returncode and "unshare failed: Invalid argument" in p.stderr:
        pytest.skip("this kernel has no user namespaces (CONFIG_USER_NS is off)")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["lines"] == ["enabled=1 ok", "alpha=3 ok", "max_segs=64 ok", "max_segs=128 ok",
                          "max_segs=129 refused", "timeout_max_us=5000 ok",
                          "timeout_max_us=10000 ok", "timeout_max_us=10001 refused"], r
    assert (r["max_segs"], r["tmax"]) == (128, 10000), r
    # the refusal says why (netlink extack)
    assert len(r["errs"]) == 2 and all("only with CAP_NET_ADMIN in the initial user namespace" in e
                                       for e in r["errs"]), r
