"""FastLane over multiple paths (CONFIG_TCP_FASTLANE_OFO) in the booted
kernel: the out-of-order-bytes option (ExID 0xFA0F) and packet-scatter mode.

h1 -- sw -- h2.  netem on sw's port towards h2 reorders h1's data (half
the packets leave at once, the other half 2 ms later: pure reordering, no
loss).  h1 sends, h2 receives; an AF_PACKET socket on h2's eth0 sees
every segment both ways, so what is on the wire is checked packet by
packet: the SYN's offer, the SYN-ACK's answer, and every byte count
against the SACK blocks of the same ACK (the receiver's out-of-order
queue as it is then).  Counters come from the namespaces' /proc/net.
"""
import ctypes
import fcntl
import json
import select
import socket
import struct
import subprocess
import threading
import time

import pytest

from dcnet.testbed.fabric import netns, sysctl
from dcnet.testbed.netlab import Lab, sh
from pktutil import inet_csum

from dcnet.wait import scaled

IPPROTO_TCP = 6
TCP_FASTLANE_SCATTER = 49
TCP_FASTLANE_OFO_INFO = 50
OFO_F_OK, OFO_F_SCATTER = 1, 2
EXID = 0xFA0F
PORT = 5001
ETH_P_ALL = 0x0003
# fewer segments than tcp_max_reordering (300): scatter mode's SACK
# fallback never fires on a reordering-only path
BYTES = 256 * 1024
REORDER = "delay 2ms reorder 50%"


def counters(ns):
    """TcpExt and Tcp counters of a namespace"""
    out = {}
    with netns(ns):
        for name in ("netstat", "snmp"):
            with open(f"/proc/thread-self/net/{name}") as f:
                lines = f.read().splitlines()
            for head, vals in zip(lines[::2], lines[1::2]):
                pre, keys = head.split(":", 1)
                for k, v in zip(keys.split(), vals.split(":", 1)[1].split()):
                    out[pre + k] = int(v)
    return out


def delta(after, before, key):
    return after.get(key, 0) - before.get(key, 0)


def tcp_options(opts):
    """[(kind, bytes)] of a TCP option block"""
    res, i = [], 0
    while i < len(opts):
        k = opts[i]
        if k == 0:
            break
        if k == 1:
            i += 1
            continue
        if i + 1 >= len(opts) or opts[i + 1] < 2:
            break
        n = opts[i + 1]
        res.append((k, opts[i:i + n]))
        i += n
    return res


def parse(pkt):
    et = struct.unpack("!H", pkt[12:14])[0]
    if et == 0x0800:
        ip = pkt[14:]
        if ip[9] != 6:
            return None
        tcp = ip[(ip[0] & 15) * 4:]
        plen = struct.unpack("!H", ip[2:4])[0] - (ip[0] & 15) * 4
    elif et == 0x86dd:
        ip = pkt[14:]
        if ip[6] != 6:
            return None
        tcp = ip[40:]
        plen = struct.unpack("!H", ip[4:6])[0]
    else:
        return None
    doff = (tcp[12] >> 4) * 4
    sport, dport, seq, ack = struct.unpack("!HHII", tcp[:12])
    p = dict(sport=sport, dport=dport, seq=seq, ack=ack, flags=tcp[13],
             payload=plen - doff, opts=tcp_options(tcp[20:doff]), raw=bytes(tcp[20:doff]),
             ofo=None, perm=False, sacks=[],
             exid_any=False, win=struct.unpack("!H", tcp[14:16])[0], ts=None, wscale=None)
    for k, b in p["opts"]:
        if k == 8 and len(b) == 10:
            p["ts"] = struct.unpack("!II", b[2:10])
        if k == 3 and len(b) == 3:
            p["wscale"] = b[2]
        if k == 254 and len(b) >= 4 and (b[2] << 8 | b[3]) == EXID:
            p["exid_any"] = True
            if len(b) == 4:
                p["perm"] = True
            elif len(b) == 8:
                p["ofo"] = struct.unpack("!I", b[4:8])[0]
        if k == 5:
            p["sacks"] = [struct.unpack("!II", b[j:j + 8]) for j in range(2, len(b) - 7, 8)]
    return p


def before(a, b):
    return ((a - b) & 0xffffffff) >= (1 << 31)


def is_dsack(ack, sacks):
    """RFC 2883: the first block reports a duplicate if it lies below the
    cumulative ACK or within the second block"""
    if not sacks:
        return False
    s0, e0 = sacks[0]
    if not before(ack, e0):
        return True
    return len(sacks) > 1 and not before(s0, sacks[1][0]) and not before(sacks[1][1], e0)


class Capture:
    """every TCP segment on h2's eth0 (both ways) while it runs"""

    def __init__(self, ns):
        with netns(ns):
            self.s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            self.s.setsockopt(socket.SOL_SOCKET, 33, 32 << 20)   # SO_RCVBUFFORCE
            self.s.bind(("eth0", 0))
        self.pkts = []
        self.stop = False
        self.t = threading.Thread(target=self.run)
        self.t.start()

    def run(self):
        while True:
            r, _, _ = select.select([self.s], [], [], 0.05)
            if r:
                data = self.s.recv(65536)
                p = parse(data)
                if p and PORT in (p["sport"], p["dport"]):
                    self.pkts.append(p)
            elif self.stop:
                break

    def done(self):
        time.sleep(0.1)
        self.stop = True
        self.t.join()
        self.s.close()
        return self.pkts


def path(lab, netem=REORDER):
    """netem on sw's port towards h2: what happens to h1's data"""
    sh(f"tc qdisc replace dev h2 root netem {netem} limit 10000", ns=lab.sw)


@pytest.fixture(scope="module")
def lab():
    lab = Lab(["h1", "h2"], prefix="oo")
    # reorder h1's data on its way to h2
    path(lab)
    yield lab
    lab.close()


def configure(lab, ofo=(0, 0), scatter=(0, 0), sack=1, ts=1):
    for name, o, s in zip(("h1", "h2"), ofo, scatter):
        with netns(lab.ns(name)):
            sysctl("net.ipv4.tcp_fastlane_ofo", o)
            sysctl("net.ipv4.tcp_fastlane_scatter", s)
            sysctl("net.ipv4.tcp_sack", sack)
            sysctl("net.ipv4.tcp_timestamps", ts)
            # no metrics from an earlier connection (reordering, ssthresh)
            sysctl("net.ipv4.tcp_no_metrics_save", 1)
        sh("ip tcp_metrics flush all 2>/dev/null || true", ns=lab.ns(name))


def transfer(lab, v6, nbytes=BYTES, scatter_sockopt=None, proto=0):
    """h1 sends nbytes to h2; the sender's TCP_FASTLANE_OFO_INFO before
    close (None for MPTCP, proto 262)"""
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    with netns(lab.ns("h2")):
        srv = socket.socket(fam, socket.SOCK_STREAM, proto)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("::" if v6 else "0.0.0.0", PORT))
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

    t = threading.Thread(target=serve)
    t.start()
    with netns(lab.ns("h1")):
        cli = socket.socket(fam, socket.SOCK_STREAM, proto)
    if scatter_sockopt is not None:
        cli.setsockopt(IPPROTO_TCP, TCP_FASTLANE_SCATTER, scatter_sockopt)
    cli.settimeout(30)
    cli.connect((lab.ip("h2", v6), PORT))
    cli.sendall(b"\x5a" * nbytes)
    # everything acknowledged before reading the state (SIOCOUTQ)
    for _ in range(3000):
        if struct.unpack("i", fcntl.ioctl(cli.fileno(), 0x5411, b"\0" * 4))[0] == 0:
            break
        time.sleep(0.002)
    if proto:
        cli.close()
        t.join(30)
        srv.close()
        assert got == [nbytes]
        return None
    raw = cli.getsockopt(IPPROTO_TCP, TCP_FASTLANE_OFO_INFO, 32)
    scatter = cli.getsockopt(IPPROTO_TCP, TCP_FASTLANE_SCATTER)
    cli.close()
    t.join(30)
    srv.close()
    assert got == [nbytes]
    keys = ("flags", "infl", "infl_max", "extra", "rcv_ofo", "rcvd", "bad", "reordering")
    info = dict(zip(keys, struct.unpack("8I", raw)))
    info["scatter_opt"] = scatter
    return info


def run(lab, v6, **kw):
    before = {n: counters(lab.ns(n)) for n in ("h1", "h2")}
    cap = Capture(lab.ns("h2"))
    try:
        info = transfer(lab, v6, **kw)
    finally:
        pkts = cap.done()
    after = {n: counters(lab.ns(n)) for n in ("h1", "h2")}
    d = {n: {k: delta(after[n], before[n], k) for k in after[n]} for n in ("h1", "h2")}
    return info, pkts, d


VARIANTS = [
    pytest.param(False, 1, 1, id="v4"),
    pytest.param(True, 1, 1, id="v6"),
    pytest.param(False, 0, 0, id="v4-nosack-nots"),
    pytest.param(True, 0, 1, id="v6-nosack"),
    pytest.param(False, 1, 0, id="v4-nots"),
]


@pytest.mark.parametrize("v6,sack,ts", VARIANTS)
def test_option_negotiated_and_matches_ofo_queue(lab, v6, sack, ts):
    configure(lab, ofo=(1, 1), sack=sack, ts=ts)
    info, pkts, d = run(lab, v6)
    syn = [p for p in pkts if p["flags"] & 0x12 == 0x02]
    synack = [p for p in pkts if p["flags"] & 0x12 == 0x12]
    assert syn and all(p["perm"] for p in syn), "the SYN offers the option"
    assert synack and all(p["perm"] for p in synack), "the SYN-ACK accepts it"
    assert info["flags"] & OFO_F_OK
    acks = [p for p in pkts if p["sport"] == PORT and not p["flags"] & 0x02]
    with_opt = [p for p in acks if p["ofo"] is not None]
    assert with_opt, "the receiver held data out of order and said so"
    # never on the sender's data, which h2 never held out of order
    assert not [p for p in pkts if p["dport"] == PORT and p["ofo"] is not None]
    exact = 0
    for p in acks:
        if p["ofo"] is None:
            # no out-of-order data: no SACK block either, but a D-SACK
            # of data below the cumulative ACK
            assert not p["sacks"] or (len(p["sacks"]) == 1 and is_dsack(p["ack"], p["sacks"])), p
            continue
        v = p["ofo"]
        assert 0 < v < BYTES
        if sack:
            assert p["sacks"], f"the option goes with a SACK block: {p}"
            blocks = list(p["sacks"])
            if is_dsack(p["ack"], blocks):
                blocks = blocks[1:]
            # the blocks are some of the out-of-order ranges (the most
            # recent ones), the count is of all of them
            held = sum((e - s) & 0xffffffff for s, e in blocks)
            assert held <= v, (v, p)
            room = (40 - (12 if ts else 0) - 8 - 4) // 8
            if len(blocks) == len(p["sacks"]) and len(blocks) < room:
                # every out-of-order range is in this ACK: the count is exact
                assert v == held, (v, p)
                exact += 1
            # at least one SACK block always fits with it
            assert len(p["sacks"]) >= 1
    if sack:
        assert exact > 0, "some ACK listed every out-of-order range"
    assert d["h2"]["TcpExtTCPFastLaneOfoSent"] >= len(with_opt)
    assert d["h1"]["TcpExtTCPFastLaneOfoRcvd"] >= 1
    assert d["h1"]["TcpExtTCPFastLaneOfoInflated"] >= 1
    assert info["infl_max"] > 0 and info["rcvd"] > 0
    assert d["h1"]["TcpExtTCPFastLaneOfoBadValue"] == 0
    assert d["h1"]["TcpExtTCPFastLaneOfoNotNegotiated"] == 0
    assert d["h2"]["TcpExtTCPFastLaneOfoNoRoom"] == 0
    assert info["bad"] == 0
    # all acknowledged: nothing held, no inflation left
    assert info["infl"] == 0


@pytest.mark.parametrize("v6", [False, True], ids=["v4", "v6"])
@pytest.mark.parametrize("on", ["h1", "h2"])
def test_one_side_off_never_sent(lab, v6, on):
    configure(lab, ofo=(1, 0) if on == "h1" else (0, 1))
    info, pkts, d = run(lab, v6)
    syn = [p for p in pkts if p["flags"] & 0x12 == 0x02]
    synack = [p for p in pkts if p["flags"] & 0x12 == 0x12]
    assert syn and synack
    # the side that is on offers it (only on the SYN: h1 is the client)
    assert all(p["perm"] for p in syn) == (on == "h1")
    assert not any(p["perm"] for p in synack)
    assert not [p for p in pkts if p["ofo"] is not None], "never sent unnegotiated"
    assert not info["flags"] & OFO_F_OK
    for n in ("h1", "h2"):
        for c in ("Sent", "Rcvd", "Inflated", "BadValue", "NotNegotiated", "NoRoom"):
            assert d[n][f"TcpExtTCPFastLaneOfo{c}"] == 0, (n, c)
    # reordering did reach h2: the option would have been sent
    assert d["h2"]["TcpExtTCPOFOQueue"] > 0


@pytest.mark.parametrize("v6", [False, True], ids=["v4", "v6"])
def test_knob_off_is_stock(lab, v6):
    configure(lab)
    info, pkts, d = run(lab, v6)
    assert pkts
    assert not [p for p in pkts if p["exid_any"]], "no option bytes on the wire"
    assert info["flags"] == 0 and info["infl_max"] == 0
    assert info["reordering"] < 300
    for n in ("h1", "h2"):
        for c in ("TCPFastLaneOfoSent", "TCPFastLaneOfoRcvd", "TCPFastLaneScatterHeld"):
            assert d[n][f"TcpExt{c}"] == 0


def stock_options(p, sack, ts):
    """the option block stock Linux writes for segment @p (the values
    taken from it): tcp_options_write()'s order and padding, byte for byte"""
    out = b""
    if p["flags"] & 0x02:
        mss = [b for k, b in p["opts"] if k == 2]
        out += mss[0] if mss else b""
        if ts and sack:
            out += b"\x04\x02"
        elif ts:
            out += b"\x01\x01"
        if ts:
            out += b"\x08\x0a" + struct.pack("!II", *p["ts"])
        if sack and not ts:
            out += b"\x01\x01\x04\x02"
        if p["wscale"] is not None:
            out += b"\x01\x03\x03" + bytes([p["wscale"]])
        return out
    if ts:
        out += b"\x01\x01\x08\x0a" + struct.pack("!II", *p["ts"])
    if p["sacks"]:
        out += b"\x01\x01\x05" + bytes([2 + 8 * len(p["sacks"])])
        out += b"".join(struct.pack("!II", *b) for b in p["sacks"])
    return out


@pytest.mark.parametrize("key", ["off", "on-elsewhere"])
@pytest.mark.parametrize("v6,sack,ts", VARIANTS)
def test_knobs_off_wire_is_stock(lab, v6, sack, ts, key):
    """With every FastLane knob off in both namespaces, each segment's TCP
    options (SYN, SYN-ACK, data, ACKs with SACK blocks) are byte for byte
    what stock Linux writes, whether the hooks' static keys are off or on
    because another namespace (the switch's) turned the knobs on."""
    on = 1 if key == "on-elsewhere" else 0
    with netns(lab.sw):
        for k in ("tcp_fastlane", "tcp_fastlane_ofo", "tcp_fastlane_scatter"):
            sysctl(f"net.ipv4.{k}", on)
    try:
        for n in ("h1", "h2"):
            with netns(lab.ns(n)):
                sysctl("net.ipv4.tcp_fastlane", 0)
        configure(lab, sack=sack, ts=ts)
        _info, pkts, d = run(lab, v6)
    finally:
        with netns(lab.sw):
            for k in ("tcp_fastlane", "tcp_fastlane_ofo", "tcp_fastlane_scatter"):
                sysctl(f"net.ipv4.{k}", 0)
    assert len(pkts) > 20
    assert any(p["flags"] & 0x12 == 0x02 for p in pkts)
    assert any(p["flags"] & 0x12 == 0x12 for p in pkts)
    if sack:
        assert any(p["sacks"] for p in pkts), "the reordering path makes SACK blocks"
    bad = [p for p in pkts if p["raw"] != stock_options(p, sack, ts)]
    assert not bad, bad[:3]
    for n in ("h1", "h2"):
        assert not any(v for k, v in d[n].items() if "FastLane" in k), d[n]


def test_knobs_count_namespaces(lab):
    """The static keys count the namespaces whose knobs are on: writing
    the same value twice, turning a knob off, and a namespace that exits
    with its knobs on leave the counts balanced (an unbalanced decrement
    is a "jump label: negative count!" WARN, which fails the run), and
    FastLane still works in a namespace after another one's exit."""
    knobs = ("tcp_fastlane", "tcp_fastlane_ofo", "tcp_fastlane_scatter")
    for i in range(3):
        name = f"flkey{i}"
        sh(f"ip netns add {name}")
        for k in knobs:
            sh(f"ip netns exec {name} sysctl -qw net.ipv4.{k}=1")
            sh(f"ip netns exec {name} sysctl -qw net.ipv4.{k}=1")
        if i == 1:
            for k in knobs:
                sh(f"ip netns exec {name} sysctl -qw net.ipv4.{k}=0")
                sh(f"ip netns exec {name} sysctl -qw net.ipv4.{k}=0")
        sh(f"ip netns del {name}")
    # the namespaces' exits run in a workqueue: let them
    time.sleep(2)
    configure(lab, ofo=(1, 1))
    info, pkts, d = run(lab, False)
    assert any(p["perm"] for p in pkts if p["flags"] & 0x12 == 0x02)
    assert info["flags"] & OFO_F_OK
    configure(lab)


# The scatter tests' path: the late half leaves 20 ms late.  With the
# 2 ms of REORDER, RACK's timer (the RTT of the segment SACKed past the
# hole plus a quarter of min_rtt) often outlasted the delay in the TCG
# guest, and stock TCP did not retransmit at all.  Runs without
# retransmissions, v6 without timestamps, 5 per delay on a loaded host:
# 3 at 2 ms, 1 at 5 ms, none at 10 ms (the fewest 1), none at 20 ms (the
# fewest 4); the scatter sender retransmitted nothing and sent no loss
# probe at any of them (tests/guest/diag_scatter.py, 2026-11-28).
SCATTER_REORDER = "delay 20ms reorder 50%"


@pytest.fixture
def scatter_path(lab):
    path(lab, SCATTER_REORDER)
    yield lab
    path(lab)


SCATTER = [
    pytest.param(False, 1, 1, id="v4"),
    pytest.param(True, 1, 1, id="v6"),
    pytest.param(True, 1, 0, id="v6-nots"),
]


@pytest.mark.parametrize("v6,sack,ts", SCATTER)
def test_scatter_no_spurious_retransmissions(scatter_path, v6, sack, ts):
    """pure reordering: stock TCP (RACK) retransmits what was only late;
    the sender in scatter mode (sysctl) retransmits nothing"""
    lab = scatter_path
    configure(lab, sack=sack, ts=ts)
    assert stock_retransmits(lab, v6), "stock TCP takes reordering for loss"
    _scatter_run(lab, v6, sack, ts)


def stock_retransmits(lab, v6, **kw):
    """does a stock sender retransmit on this path?  RACK's timer depends
    on the guest's timing (see SCATTER_REORDER): up to 3 tries"""
    for _ in range(3):
        info, _pkts, stock = run(lab, v6, **kw)
        assert info["flags"] & OFO_F_SCATTER == 0
        if stock["h1"]["TcpRetransSegs"] > 0:
            return True
    return False


@pytest.mark.parametrize("v6", [False, True], ids=["v4", "v6"])
def test_scatter_reno_no_retransmissions(scatter_path, v6):
    """SACK and timestamps off (Reno): the scatter sender's duplicate-ACK
    threshold is tcp_max_reordering and it retransmits nothing.  (Stock
    Reno did not retransmit on this path either in our runs, so this does
    not show a difference, only that scatter mode keeps working.)"""
    _scatter_run(scatter_path, v6, 0, 0)


def _scatter_run(lab, v6, sack, ts):
    configure(lab, ofo=(1, 1), scatter=(1, 0), sack=sack, ts=ts)
    info, pkts, sc = run(lab, v6)
    assert info["flags"] & OFO_F_SCATTER and info["scatter_opt"] == 1
    assert info["reordering"] >= 300
    assert sc["h1"]["TcpRetransSegs"] == 0, sc["h1"]
    assert sc["h2"]["TcpExtTCPOFOQueue"] > 0, "the path did reorder"
    if sack:
        assert sc["h1"]["TcpExtTCPFastLaneScatterHeld"] > 0


def test_scatter_socket_option(scatter_path):
    """TCP_FASTLANE_SCATTER overrides the netns default both ways"""
    lab = scatter_path
    configure(lab, scatter=(1, 0))
    assert stock_retransmits(lab, False, scatter_sockopt=0)
    configure(lab)
    info, _pkts, d = run(lab, False, scatter_sockopt=1)
    assert info["flags"] & OFO_F_SCATTER and info["scatter_opt"] == 1
    assert d["h1"]["TcpRetransSegs"] == 0
    with netns(lab.ns("h1")):
        s = socket.socket()
    with pytest.raises(OSError):
        s.setsockopt(IPPROTO_TCP, TCP_FASTLANE_SCATTER, 2)
    s.setsockopt(IPPROTO_TCP, TCP_FASTLANE_SCATTER, -1)
    s.close()


IPPROTO_MPTCP = 262


@pytest.mark.parametrize("ts", [1, 0], ids=["ts", "nots"])
def test_mptcp_option_space(lab, ts):
    """MPTCP keeps precedence over the option, and the option never takes
    the last SACK block: on every subflow ACK with SACK blocks the option
    is there exactly when timestamps + MPTCP's options + 8 + one SACK
    block (12) fit in 40 bytes; otherwise it is left off and counted"""
    configure(lab, ofo=(1, 1), ts=ts)
    _info, pkts, d = run(lab, False, proto=IPPROTO_MPTCP)
    syn = [p for p in pkts if p["flags"] & 0x12 == 0x02]
    synack = [p for p in pkts if p["flags"] & 0x12 == 0x12]

    def mp_len(p):
        return sum((len(b) + 3) & ~3 for k, b in p["opts"] if k == 30)

    assert syn and all(p["perm"] and mp_len(p) for p in syn)
    assert synack and all(p["perm"] and mp_len(p) for p in synack)
    acks = [p for p in pkts if p["sport"] == PORT and not p["flags"] & 0x02 and p["sacks"]
            and not is_dsack(p["ack"], p["sacks"])]
    assert acks, "the receiver SACKed reordered data"
    seen = {}
    for p in acks:
        fits = 12 * ts + mp_len(p) + 8 + 12 <= 40
        assert (p["ofo"] is not None) == fits, (mp_len(p), p)
        if fits:
            assert len(p["sacks"]) <= (40 - 12 * ts - mp_len(p) - 8 - 4) // 8
        key = (mp_len(p), p["ofo"] is not None, len(p["sacks"]))
        seen[key] = seen.get(key, 0) + 1
    print("MPTCP ACKs (mptcp bytes, option, SACK blocks): count", seen)
    if any(not k[1] for k in seen):
        assert d["h2"]["TcpExtTCPFastLaneOfoNoRoom"] > 0


FL_EXID = 0xFA57      # the timeout count FastLane no longer sends
SPLAT = ("BUG:", "WARNING: CPU:", "Oops:", "------------[ cut here ]------------",
         "possible circular locking")


def splats():
    """the kernel's splat lines so far"""
    out = subprocess.run(["dmesg"], capture_output=True, text=True).stdout
    return [ln for ln in out.splitlines() if any(x in ln for x in SPLAT)]


def fastlane(lab, on):
    for name in ("h1", "h2"):
        with netns(lab.ns(name)):
            sysctl("net.ipv4.tcp_fastlane", on)


@pytest.mark.parametrize("v6", [False, True], ids=["v4", "v6"])
def test_mptcp_with_fastlane_keeps_its_mapping(lab, v6):
    """net.ipv4.tcp_fastlane=1 with timestamps: FastLane takes no option
    space, so data goes with its DSS mappings (a mapping may cover the
    segments after it), the connection does not fall back to TCP, and
    MPTCP's option-space WARN_ON_ONCE (mptcp_established_options()) stays
    silent.  A timeout count reserved ahead of MPTCP once left 20 bytes
    for a 24-28 byte mapping."""
    configure(lab, ts=1)
    fastlane(lab, 1)
    bad = splats()
    try:
        _info, pkts, d = run(lab, v6, proto=IPPROTO_MPTCP)
    finally:
        fastlane(lab, 0)
    new = splats()[len(bad):]
    assert not new, "a splat: " + "\n".join(new)
    data = [p for p in pkts if p["dport"] == PORT and p["payload"] > 0]
    assert data, "no data segments captured"

    def has(p, kind, pred=lambda b: True):
        return any(k == kind and pred(b) for k, b in p["opts"])

    def dss(b):
        # DSS (2), or the MP_CAPABLE that maps the first data (0)
        return len(b) >= 3 and b[2] >> 4 in (0, 2)

    def count(b):
        return len(b) >= 4 and (b[2] << 8 | b[3]) == FL_EXID

    mapped = [p for p in data if has(p, 30, dss)]
    print(f"{len(data)} data segments, {len(mapped)} with a DSS mapping")
    assert has(data[0], 30, dss), data[0]["opts"]
    assert 2 * len(mapped) >= len(data), (len(mapped), len(data))
    assert not any(has(p, 254, count) for p in pkts), "the timeout count on an MPTCP subflow"
    for host in ("h1", "h2"):
        for k in ("MPTcpExtMPCapableDataFallback", "MPTcpExtMPCapableFallbackACK",
                  "MPTcpExtMPCapableFallbackSYNACK", "MPTcpExtDSSNotMatching"):
            assert d[host].get(k, 0) == 0, (host, k, d[host][k])


def test_plain_tcp_sends_what_stock_sends(lab):
    """the same namespaces, plain TCP, FastLane on and no notification
    arriving: the segments carry the options stock TCP puts on them (MSS,
    SACK, timestamps, window scale), never an experimental option"""
    configure(lab, ts=1)
    fastlane(lab, 1)
    try:
        _info, pkts, _d = run(lab, False)
    finally:
        fastlane(lab, 0)
    mine = [p for p in pkts if p["dport"] == PORT]
    kinds = {k for p in mine for k, _ in p["opts"]}
    assert mine and any(p["payload"] > 0 for p in mine)
    assert kinds <= {1, 2, 3, 4, 5, 8}, kinds
    data = [p for p in mine if p["payload"] > 0]
    assert all(any(k == 8 for k, _ in p["opts"]) for p in data), "a data segment without timestamps"


@pytest.mark.parametrize("knob", ["tcp_fastlane_ofo", "tcp_fastlane_scatter"])
def test_ss_on_a_listener_does_not_sleep_in_atomic(lab, knob):
    """`ss -tlni` (any user) in a namespace with the option or scatter on:
    inet_diag fills listeners under the listening hash's spinlock, and
    the attribute's lock_sock_fast() there was a sleep in atomic context
    (CONFIG_DEBUG_ATOMIC_SLEEP reports it).  Listeners get no attribute;
    a connected socket still does."""
    ns = lab.ns("h2")
    with netns(ns):
        sysctl(f"net.ipv4.{knob}", 1)
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("0.0.0.0", PORT))
        srv.listen(4)
    bad = splats()
    try:
        out = sh(f"ss -tlni sport = :{PORT}", ns=ns)
        assert f":{PORT}" in out, out
    finally:
        srv.close()
        with netns(ns):
            sysctl(f"net.ipv4.{knob}", 0)
    new = splats()[len(bad):]
    assert not new, "a splat: " + "\n".join(new)


# ------------------------------------------------- untrusted input: forged segments
#
# The peer's TCP stack is bypassed: a raw socket in h2's namespace sends
# segments as h2 to h1's connection (or as h1 to h2's listener), with
# the sequence numbers, window and timestamps that h2's last segment on
# the wire carried, so that h1 takes them.  sw's port towards h2 drops
# everything meanwhile, so that h1's data stays unacknowledged and
# nothing of h2's stack interferes.

SIOCOUTQ, SIOCOUTQNSD = 0x5411, 0x894B
OUTSTANDING = 8000      # bytes h1 has in flight, unacknowledged (< IW10)
BAD_COUNTERS = ("TcpExtTCPFastLaneOfoBadValue", "TcpExtTCPFastLaneOfoNotNegotiated",
                "TcpExtTCPFastLaneOfoRcvd", "TcpExtTCPFastLaneOfoInflated")


def nstat(ns):
    """the namespace's counters, as nstat(8) reads them"""
    out = json.loads(sh("nstat -saz --json", ns=ns))
    return out.get("kernel", out)


def nstat_delta(after, before):
    return {k: after.get(k, 0) - before.get(k, 0) for k in BAD_COUNTERS}


def ofo_opt(val=None, length=8):
    """our experimental option: the offer (length 4), a byte count
    (length 8) or our ExID with another length"""
    b = bytes([254, length, EXID >> 8, EXID & 0xff])
    if length == 8:
        b += struct.pack("!I", val)
    elif length > 4:
        b += b"\0" * (length - 4)
    return b


def segment(src, dst, sport, dport, seq, ack, flags, win, opts, v6, payload=b""):
    """a TCP segment (header, options and payload) with its checksum"""
    opts += b"\1" * (-len(opts) % 4)
    hdr = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xffffffff, ack, (5 + len(opts) // 4) << 4,
                      flags, win, 0, 0) + opts + payload
    if v6:
        pseudo = (socket.inet_pton(socket.AF_INET6, src) + socket.inet_pton(socket.AF_INET6, dst)
                  + struct.pack("!I3xB", len(hdr), 6))
    else:
        pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!xBH", 6, len(hdr))
    c = inet_csum(pseudo + hdr)
    return hdr[:16] + struct.pack("!H", c) + hdr[18:]


class Forger:
    """a raw TCP socket in namespace ns that sends segments from src"""

    def __init__(self, ns, src, v6):
        fam = socket.AF_INET6 if v6 else socket.AF_INET
        with netns(ns):
            self.s = socket.socket(fam, socket.SOCK_RAW, socket.IPPROTO_TCP)
        self.s.bind((src, 0))
        self.src, self.v6 = src, v6

    def send(self, dst, *args, payload=b""):
        self.s.sendto(segment(self.src, dst, *args, v6=self.v6, payload=payload), (dst, 0))

    def close(self):
        self.s.close()


def ss_ofo(lab, host, cport):
    """the fastlane_ofo:(...) fields ss -ti prints for the connection from
    local port cport (None without them)"""
    out = sh(f"ss -tinH 'sport = :{cport}'", ns=lab.ns(host))
    if "fastlane_ofo:(" not in out:
        return None
    body = out.split("fastlane_ofo:(")[1].split(")")[0]
    return {k: int(v) for k, v in (kv.split(":") for kv in body.split(","))}


OFO_INFO_KEYS = ("flags", "infl", "infl_max", "extra", "rcv_ofo", "rcvd", "bad", "reordering",
                 "rcv_walk", "rcv_ofo_full")


def ofo_info(sock, n=8):
    """TCP_FASTLANE_OFO_INFO, its first n fields"""
    return dict(zip(OFO_INFO_KEYS, struct.unpack(f"{n}I", sock.getsockopt(IPPROTO_TCP, TCP_FASTLANE_OFO_INFO,
                                                                           4 * n))))


def ioctl_int(sock, req):
    return struct.unpack("i", fcntl.ioctl(sock.fileno(), req, b"\0" * 4))[0]


def wait_for(cond, timeout=3.0):
    """poll cond until it holds or timeout (stretched by
    DCNET_TIMEOUT_SCALE) passes; its last value"""
    end = time.monotonic() + scaled(timeout)
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


def pin_neighbours(ns):
    """make the resolved neighbour entries of namespace ns permanent; the
    pinned (address, device) pairs.  While sw drops everything towards h2,
    h2's neighbour probes get no answer: without the pin an entry fails
    after its reachable time (15-45 s) and h2 can no longer send at all."""
    pinned = []
    for e in json.loads(sh("ip -j neigh show", ns=ns) or "[]"):
        if "lladdr" in e and "PERMANENT" not in e.get("state", []):
            sh(f"ip neigh replace {e['dst']} lladdr {e['lladdr']} dev {e['dev']} nud permanent", ns=ns)
            pinned.append((e["dst"], e["dev"]))
    return pinned


def unpin_neighbours(ns, pinned):
    for dst, dev in pinned:
        sh(f"ip neigh del {dst} dev {dev} 2>/dev/null || true", ns=ns)


LONG_RTO = "60s"


def rto_route(lab, rto_min):
    """h1's route to h2 with an RTO floor (None: the default route only)"""
    h1 = lab.ns("h1")
    if rto_min is None:
        sh("ip route del 10.0.2.0/24 2>/dev/null; ip -6 route del fd00:2::/64 2>/dev/null; true", ns=h1)
    else:
        sh(f"ip route replace 10.0.2.0/24 via 10.0.1.254 rto_min {rto_min};"
           f" ip -6 route replace fd00:2::/64 via fd00:1::fe rto_min {rto_min}", ns=h1)


def tcp_info_unacked_cwnd(sock):
    """tcpi_unacked and tcpi_snd_cwnd (segments)"""
    ti = sock.getsockopt(IPPROTO_TCP, socket.TCP_INFO, 104)
    return struct.unpack_from("I", ti, 24)[0], struct.unpack_from("I", ti, 80)[0]


class Blackholed:
    """h1 -> h2 connected, 1000 bytes delivered, then sw's port towards h2
    drops everything and h1 sends OUTSTANDING more bytes, which stay
    unacknowledged; ack() forges h2's ACKs to h1"""

    def __init__(self, lab, v6, rto_min=None):
        self.lab, self.v6 = lab, v6
        fam = socket.AF_INET6 if v6 else socket.AF_INET
        # rto_min: h1's route to h2 with that RTO floor.  LONG_RTO keeps
        # h1 out of CA_Loss while a test forges ACKs (the inflation ends
        # with a timeout); finish() then makes h1 resend by a new segment
        # whose SACK shows the hole
        self.rto_min = rto_min
        rto_route(lab, rto_min)
        cap = Capture(lab.ns("h2"))
        try:
            with netns(lab.ns("h2")):
                self.srv = socket.socket(fam, socket.SOCK_STREAM)
            self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.srv.bind(("::" if v6 else "0.0.0.0", PORT))
            self.srv.listen(1)
            with netns(lab.ns("h1")):
                self.cli = socket.socket(fam, socket.SOCK_STREAM)
            self.cli.setsockopt(IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.cli.settimeout(10)
            self.cli.connect((lab.ip("h2", v6), PORT))
            self.conn, _ = self.srv.accept()
            self.cli.sendall(b"a" * 1000)
            got = 0
            while got < 1000:
                got += len(self.conn.recv(4096))
            # all acknowledged: h2's ACKs passed its eth0, so the capture
            # holds them (cap.done() reads what its socket still holds)
            assert wait_for(lambda: ioctl_int(self.cli, SIOCOUTQ) == 0)
        finally:
            pkts = cap.done()
        self.cport = self.cli.getsockname()[1]
        mine = [p for p in pkts if p["sport"] == PORT and p["dport"] == self.cport]
        synack = [p for p in mine if p["flags"] & 0x12 == 0x12]
        last = mine[-1]
        self.seq = (last["seq"] + last["payload"]) & 0xffffffff
        self.una = last["ack"]
        self.win = last["win"]
        self.ts = last["ts"]
        self.wscale = synack[0]["wscale"] or 0
        self.negotiated = bool(synack[0]["perm"])
        self.pinned = pin_neighbours(lab.ns("h2"))
        path(lab, "loss 100%")
        self.closed, self.holed = False, True
        self.holed_at = time.monotonic()
        self.cli.send(b"b" * OUTSTANDING)
        assert wait_for(lambda: ioctl_int(self.cli, SIOCOUTQ) - ioctl_int(self.cli, SIOCOUTQNSD)
                        == OUTSTANDING), "all of it in flight"
        self.forger = Forger(lab.ns("h2"), lab.ip("h2", v6), v6)

    def ack(self, opt=b"", win=None, counted=True):
        """a duplicate ACK from h2 with the option bytes opt (after the
        timestamps, if any) and the window field win; wait until h1 took it
        (its count of options taken or ignored moved) if it is counted"""
        before = ofo_info(self.cli)
        opts = b""
        if self.ts:
            opts = bytes([1, 1, 8, 10]) + struct.pack("!II", *self.ts)
        self.forger.send(self.lab.ip("h1", self.v6), PORT, self.cport, self.seq, self.una,
                         0x10, self.win if win is None else win, opts + opt)
        if opt and counted:
            assert wait_for(lambda: ofo_info(self.cli)["rcvd"] + ofo_info(self.cli)["bad"]
                            != before["rcvd"] + before["bad"], timeout=30), \
                f"h1 never counted the forged ACK with option {opt.hex()}"
        else:
            time.sleep(0.1)
        return ofo_info(self.cli)

    def restore(self):
        if self.holed:
            path(self.lab)
            unpin_neighbours(self.lab.ns("h2"), self.pinned)
            self.holed = False

    def finish(self):
        """the path back as it was: h1's data gets through, a real new ACK"""
        # h1's retransmission timer backs off while the path is cut: its
        # next retransmission can be as far off as the cut has lasted
        # (up to TCP_RTO_MAX), however slow the guest was meanwhile
        cut = time.monotonic() - self.holed_at
        if self.rto_min == LONG_RTO:
            # the window h2 last advertised, in case a test shrank it
            self.ack()
        self.restore()
        got = 0
        self.conn.settimeout(min(2 * cut, 120) + 15)
        if self.rto_min == LONG_RTO:
            # no timeout comes: a new byte reaches h2, its SACK shows the
            # hole, and RACK resends it at once
            self.cli.send(b"z")
        while got < OUTSTANDING:
            got += len(self.conn.recv(65536))
        ok = wait_for(lambda: ioctl_int(self.cli, SIOCOUTQ) == 0, timeout=30)
        info = ofo_info(self.cli)
        self.close()
        return ok, info

    def close(self):
        if self.closed:
            return
        self.closed = True
        self.forger.close()
        self.restore()
        rto_route(self.lab, None)
        for s in (self.cli, self.conn, self.srv):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()


@pytest.mark.parametrize("v6,ts", [pytest.param(False, 1, id="v4"), pytest.param(True, 1, id="v6"),
                                   pytest.param(False, 0, id="v4-nots")])
def test_forged_values_ignored_and_counted(lab, v6, ts):
    """On a negotiated connection, byte counts that are not plausible
    (not below what is outstanding, wrapping, beyond the receive window),
    our ExID with a length we do not know and the offer on a non-SYN are
    ignored and counted (TCPFastLaneOfoBadValue), the inflation left as
    it was; plausible ones are taken; the inflation never exceeds the
    receive window (a zero window clears it); a duplicate ACK without the
    option keeps it, and the real new ACK without it ends it."""
    configure(lab, ofo=(1, 1), ts=ts)
    n0 = nstat(lab.ns("h1"))
    # no timeout while it forges: a timeout ends the inflation
    b = Blackholed(lab, v6, rto_min=LONG_RTO)
    try:
        assert b.negotiated and bool(b.ts) == bool(ts)
        i = b.ack(ofo_opt(1000))
        assert (i["rcvd"], i["bad"], i["infl"]) == (1, 0, 1000), i
        # ss -ti shows it (INET_DIAG_FASTLANE_OFO)
        fo = ss_ofo(lab, "h1", b.cport)
        assert fo and (fo["ok"], fo["infl"], fo["infl_max"], fo["rcvd"], fo["bad"]) == \
            (1, 1000, 1000, 1, 0), fo
        bad = 0
        for opt in (ofo_opt(OUTSTANDING),            # all of it: the hole is not held
                    ofo_opt(OUTSTANDING + 1448),     # more than was sent
                    ofo_opt(0xffffffff),             # "negative"
                    ofo_opt(0x80000000),             # wraps the sequence space
                    ofo_opt(length=12),              # a length we do not know
                    ofo_opt(length=6),
                    ofo_opt(length=4)):              # the offer, not on a SYN
            i = b.ack(opt)
            bad += 1
            assert (i["rcvd"], i["bad"], i["infl"]) == (1, bad, 1000), (opt, i)
        # a zero window: a count of 500 is beyond it, and the inflation
        # is clamped to it
        i = b.ack(ofo_opt(500), win=0)
        bad += 1
        assert (i["rcvd"], i["bad"], i["infl"]) == (1, bad, 0), i
        # the window opens to one unit (1 << wscale bytes): a count one
        # byte beyond it is ignored, one equal to it taken
        w = 1 << b.wscale
        assert w + 1 < OUTSTANDING
        i = b.ack(ofo_opt(w + 1), win=1)
        bad += 1
        assert (i["rcvd"], i["bad"], i["infl"]) == (1, bad, 0), i
        i = b.ack(ofo_opt(w), win=1)
        assert (i["rcvd"], i["bad"], i["infl"]) == (2, bad, w), i
        # a duplicate ACK without the option (stripped): max(inflation, 0)
        i = b.ack(win=1)
        assert (i["rcvd"], i["bad"], i["infl"]) == (2, bad, w), i
        assert i["infl_max"] == 1000
        ok, i = b.finish()
    finally:
        b.close()
    assert ok, "the data got through once the path was back"
    assert i["infl"] == 0, "a new ACK without the option: nothing held"
    d = nstat_delta(nstat(lab.ns("h1")), n0)
    assert d["TcpExtTCPFastLaneOfoBadValue"] == bad
    assert d["TcpExtTCPFastLaneOfoRcvd"] >= 2
    assert d["TcpExtTCPFastLaneOfoNotNegotiated"] == 0


@pytest.mark.parametrize("v6", [False, True], ids=["v4", "v6"])
def test_inflation_bounded_by_cwnd_growth(lab, v6):
    """A negotiated peer that claims outstanding - 1 bytes on every ACK
    (plausible by construction) lets h1 send that much more, which makes
    the next claim larger: without a bound the flight grows to the
    receive window, whatever cwnd says.  The inflation adds at most cwnd
    segments (the window at most doubles in a round trip, as slow start
    would)."""
    configure(lab, ofo=(1, 1))
    b = Blackholed(lab, v6, rto_min=LONG_RTO)
    try:
        assert b.negotiated
        b.cli.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        b.cli.send(b"c" * 400_000, socket.MSG_DONTWAIT)
        seen = []
        for _ in range(8):
            out = ioctl_int(b.cli, SIOCOUTQ) - ioctl_int(b.cli, SIOCOUTQNSD)
            i = b.ack(ofo_opt(out - 1))
            time.sleep(0.3)         # h1 sends what the inflation allows
            unacked, cwnd = tcp_info_unacked_cwnd(b.cli)
            seen.append((out, i["infl"], unacked, cwnd))
        print(f"claims of outstanding - 1 ({'v6' if v6 else 'v4'}): (outstanding, infl, unacked, cwnd) {seen}")
        # a TLP probe may go beyond
        assert all(u <= 2 * c + 1 for _, _, u, c in seen), seen
    finally:
        # no finish(): the flight fills cwnd plus the inflation, so no new
        # segment can show the hole before the 60 s RTO
        b.close()


@pytest.mark.parametrize("v6", [False, True], ids=["v4", "v6"])
def test_inflation_ends_with_a_timeout(lab, v6):
    """A retransmission timeout ends the inflation: the flight it stood for
    is lost, cwnd is one segment, and no byte count, old or new, lets
    h1 send beyond it until the loss recovery is over.  Before, the
    inflation outlived the RTO and a duplicate ACK in CA_Loss kept or
    raised it."""
    configure(lab, ofo=(1, 1))
    n0 = nstat(lab.ns("h1"))
    # an RTO floor long enough for the first forged ACK to come before it
    # in a loaded guest
    b = Blackholed(lab, v6, rto_min="15s")
    try:
        assert b.negotiated
        i = b.ack(ofo_opt(1000))
        assert nstat(lab.ns("h1")).get("TcpExtTCPTimeouts", 0) == n0.get("TcpExtTCPTimeouts", 0), \
            "the RTO came before the first forged ACK"
        assert i["infl"] == 1000, i
        assert wait_for(lambda: nstat(lab.ns("h1")).get("TcpExtTCPTimeouts", 0) >
                        n0.get("TcpExtTCPTimeouts", 0), timeout=60), "no RTO"
        after = [b.ack()["infl"], b.ack(ofo_opt(1000))["infl"]]
        print(f"inflation after the RTO ({'v6' if v6 else 'v4'}): {after}")
        assert after == [0, 0], after
        ok, i = b.finish()
    finally:
        b.close()
    assert ok, "the data got through once the path was back"


@pytest.mark.parametrize("v6", [False, True], ids=["v4", "v6"])
def test_forged_value_not_negotiated(lab, v6):
    """h2 did not offer the option: a byte count on an ACK is ignored
    (no inflation) and counted (TCPFastLaneOfoNotNegotiated); with the
    option off in h1's namespace too it is not even looked at"""
    configure(lab, ofo=(1, 0))
    n0 = nstat(lab.ns("h1"))
    b = Blackholed(lab, v6)
    try:
        assert not b.negotiated
        i = b.ack(ofo_opt(1000))
        assert (i["flags"] & OFO_F_OK, i["rcvd"], i["bad"], i["infl"]) == (0, 0, 1, 0), i
        i = b.ack(ofo_opt(length=4))
        assert (i["rcvd"], i["bad"], i["infl"]) == (0, 2, 0), i
        n1 = nstat(lab.ns("h1"))
        d = nstat_delta(n1, n0)
        assert d["TcpExtTCPFastLaneOfoNotNegotiated"] == 2
        assert d["TcpExtTCPFastLaneOfoBadValue"] == 0 and d["TcpExtTCPFastLaneOfoRcvd"] == 0
        # off in h1's namespace: stock, the option is an unknown one
        with netns(lab.ns("h1")):
            sysctl("net.ipv4.tcp_fastlane_ofo", 0)
        b.ack(ofo_opt(1000), counted=False)
        b.ack(ofo_opt(length=6), counted=False)
        i = ofo_info(b.cli)
        assert (i["rcvd"], i["bad"], i["infl"]) == (0, 2, 0), i
        assert not any(nstat_delta(nstat(lab.ns("h1")), n1).values())
        # a socket that neither negotiated it nor scatters, in a netns
        # where it is off: no INET_DIAG_FASTLANE_OFO for ss
        assert ss_ofo(lab, "h1", b.cport) is None
    finally:
        b.close()


@pytest.mark.parametrize("v6", [False, True], ids=["v4", "v6"])
def test_forged_value_on_syn(lab, v6):
    """A SYN carrying a byte count (or our ExID with a length we do not
    know) instead of the offer: counted (TCPFastLaneOfoBadValue), and the
    SYN-ACK does not accept the option; a real offer on the same listener
    is accepted"""
    configure(lab, ofo=(1, 1))
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    with netns(lab.ns("h2")):
        srv = socket.socket(fam, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("::" if v6 else "0.0.0.0", PORT))
    srv.listen(8)
    n0 = nstat(lab.ns("h2"))
    cap = Capture(lab.ns("h2"))
    f = Forger(lab.ns("h1"), lab.ip("h1", v6), v6)
    mss = bytes([2, 4, 0x05, 0xb4])
    try:
        for sport, opt in ((40001, ofo_opt(1000)), (40002, ofo_opt(length=12)),
                           (40003, ofo_opt(length=4))):
            f.send(lab.ip("h2", v6), sport, PORT, 1000, 0, 0x02, 65535, mss + opt)
        # the listener answered each SYN (or never will: the assertion says)
        wait_for(lambda: {p["dport"] for p in list(cap.pkts) if p["sport"] == PORT and p["flags"] & 0x12 == 0x12}
                 >= {40001, 40002, 40003}, timeout=5)
    finally:
        f.close()
        pkts = cap.done()
        srv.close()
    d = nstat_delta(nstat(lab.ns("h2")), n0)
    synack = {p["dport"]: p for p in pkts if p["sport"] == PORT and p["flags"] & 0x12 == 0x12}
    assert set(synack) == {40001, 40002, 40003}, "the listener answered every SYN"
    assert not synack[40001]["perm"] and not synack[40002]["perm"]
    assert synack[40003]["perm"], "the offer alone is accepted"
    assert d["TcpExtTCPFastLaneOfoBadValue"] == 2
    assert d["TcpExtTCPFastLaneOfoNotNegotiated"] == 0


GAPPED = 100    # 1-byte segments with a 1-byte gap before each


@pytest.mark.parametrize("v6", [False, True], ids=["v4", "v6"])
def test_receiver_count_is_incremental(lab, v6):
    """h1 (negotiated) sends h2 GAPPED 1-byte segments, each after a
    hole: h2 ACKs each one with the option, and the byte count it puts
    there is kept as its out-of-order queue changes, not recounted from
    the queue on every ACK (that was O(n) per ACK, O(n^2) in all: the
    SegmentSmack pattern).  The count equals a full recount of the queue
    after gapped inserts, a segment that fills holes and covers one
    already held, a duplicate, and the in-order byte that moves part of
    the queue to the receive queue; the queue skbs it looked at stay
    within a few per change."""
    configure(lab, ofo=(1, 1), ts=0)
    path(lab, "delay 0ms")
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    cap = Capture(lab.ns("h2"))
    try:
        with netns(lab.ns("h2")):
            srv = socket.socket(fam, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # room for GAPPED small skbs in the out-of-order queue
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        srv.bind(("::" if v6 else "0.0.0.0", PORT))
        srv.listen(1)
        with netns(lab.ns("h1")):
            cli = socket.socket(fam, socket.SOCK_STREAM)
        cli.settimeout(10)
        cli.connect((lab.ip("h2", v6), PORT))
        conn, _ = srv.accept()
        cli.sendall(b"a" * 1000)
        got = 0
        while got < 1000:
            got += len(conn.recv(4096))
        assert wait_for(lambda: ioctl_int(cli, SIOCOUTQ) == 0)
    finally:
        pkts = cap.done()
    cport = cli.getsockname()[1]
    data = [p for p in pkts if p["sport"] == cport and p["dport"] == PORT and p["payload"] > 0]
    s0 = (data[-1]["seq"] + data[-1]["payload"]) & 0xffffffff   # h2's rcv_nxt
    ack, win = data[-1]["ack"], data[-1]["win"]
    f = Forger(lab.ns("h1"), lab.ip("h1", v6), v6)
    dst = lab.ip("h2", v6)

    def send(off, n):
        f.send(dst, cport, PORT, s0 + off, ack, 0x18, win, b"", payload=b"x" * n)

    def held(n):
        ok = wait_for(lambda: ofo_info(conn, 10)["rcv_ofo"] == n, timeout=10)
        i = ofo_info(conn, 10)
        assert ok and i["rcv_ofo_full"] == n, (n, i)
        return i

    try:
        w0 = ofo_info(conn, 10)["rcv_walk"]
        for k in range(GAPPED):
            send(2 + 2 * k, 1)
        i = held(GAPPED)
        assert i["flags"] & OFO_F_OK
        walked = i["rcv_walk"] - w0
        # a few neighbours per change; a recount per ACK is ~n^2/2
        assert walked <= 8 * GAPPED, f"{walked} skbs looked at for {GAPPED} segments"
        send(1, 3)          # fills s0+1 and s0+3, covers s0+2: +2
        held(GAPPED + 2)
        send(4, 1)          # a duplicate: nothing new
        held(GAPPED + 2)
        send(0, 1)          # in order: s0..s0+5 delivered, 4 bytes leave the queue
        held(GAPPED - 2)
        assert wait_for(lambda: conn.recv(64, socket.MSG_DONTWAIT | socket.MSG_PEEK) == b"xxxxx")
    finally:
        f.close()
        path(lab)
        for s in (cli, conn, srv):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()


def disconnect(sock):
    """connect(AF_UNSPEC): the socket is closed and may connect again"""
    libc = ctypes.CDLL(None, use_errno=True)
    sa = struct.pack("H14x", socket.AF_UNSPEC)
    assert libc.connect(sock.fileno(), sa, len(sa)) == 0, ctypes.get_errno()


@pytest.mark.parametrize("v6", [False, True], ids=["v4", "v6"])
def test_reconnected_socket_starts_clean(lab, v6):
    """A socket disconnected (connect(AF_UNSPEC)) and connected again
    carries nothing of its first connection's option state: inflation,
    its maximum and the counts of byte counts taken and ignored start at
    0, and the option is negotiated anew"""
    configure(lab, ofo=(1, 1))
    b = Blackholed(lab, v6)
    conn2 = None
    try:
        assert b.negotiated
        b.ack(ofo_opt(1000))
        i = b.ack(ofo_opt(0xffffffff))
        assert (i["rcvd"], i["bad"], i["infl"], i["infl_max"]) == (1, 1, 1000, 1000), i
        b.restore()
        disconnect(b.cli)
        b.cli.connect((lab.ip("h2", v6), PORT))
        conn2, _ = b.srv.accept()
        i = ofo_info(b.cli)
        assert i["flags"] & OFO_F_OK, i
        assert (i["rcvd"], i["bad"], i["infl"], i["infl_max"]) == (0, 0, 0, 0), i
        fo = ss_ofo(lab, "h1", b.cli.getsockname()[1])
        assert fo and (fo["rcvd"], fo["bad"], fo["infl_max"]) == (0, 0, 0), fo
    finally:
        if conn2:
            conn2.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn2.close()
        b.close()
