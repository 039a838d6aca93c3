"""Presto's flowcells in the kernel's Open vSwitch datapath, without Open
vSwitch userspace: the tests speak generic netlink to net/openvswitch
themselves (a datapath of their own, OVS_PACKET_CMD_EXECUTE with the
actions hash(flowcell, size) + userspace(our socket)) and read back, per
packet, the dp_hash of the flow key and the packet as the actions left it.

They show: consecutive flowcells of a TCP flow (IPv4 and IPv6) take
consecutive hash values with bit 31 set, a TSO-sized packet is one
decision, the flowcell ID is in the low 16 bits of the source MAC; pure
ACKs and UDP take the L4 hash, unmodified; the counters in
OVS_DP_ATTR_FLOWCELL; the flow limit with LRU eviction; idle flows freed;
seeded starts (OVS_FLOWCELL_ATTR_SEED) repeat across datapaths and restarts;
flowlets (OVS_FLOWCELL_ATTR_GAP_US): a flow sending without pause stays in
one flowcell whatever its size, a pause longer than the gap moves it to the
next hash value (the next path), gap 0 is the stock flowcells; bad sizes,
bad gaps and malformed attributes refused (with an extack message).
"""
import errno
import os
import select
import socket
import struct
import subprocess
import time

import pytest

from pktutil import inet_csum

NETLINK_GENERIC = 16
SOL_NETLINK = 270
NETLINK_CAP_ACK = 10
NETLINK_EXT_ACK = 11
NLM_F_REQUEST, NLM_F_ACK, NLM_F_ECHO = 1, 4, 8
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLM_F_ACK_TLVS = 0x200
NLMSGERR_ATTR_MSG = 1
GENL_ID_CTRL, CTRL_CMD_GETFAMILY, CTRL_ATTR_FAMILY_ID, CTRL_ATTR_FAMILY_NAME = 0x10, 3, 1, 2
NLA_TYPE_MASK = 0x3fff

# include/uapi/linux/openvswitch.h (6.12 + kernel-patches/0008)
OVS_DP_CMD_NEW, OVS_DP_CMD_DEL, OVS_DP_CMD_GET, OVS_DP_CMD_SET = 1, 2, 3, 4
OVS_DP_ATTR_NAME, OVS_DP_ATTR_UPCALL_PID, OVS_DP_ATTR_USER_FEATURES = 1, 2, 5
OVS_DP_ATTR_FLOWCELL = 10
(OVS_FLOWCELL_ATTR_PAD, OVS_FLOWCELL_ATTR_LIMIT, OVS_FLOWCELL_ATTR_IDLE_MSECS,
 OVS_FLOWCELL_ATTR_FLOWS, OVS_FLOWCELL_ATTR_PACKETS, OVS_FLOWCELL_ATTR_BYTES,
 OVS_FLOWCELL_ATTR_CELLS, OVS_FLOWCELL_ATTR_EVICTIONS, OVS_FLOWCELL_ATTR_EXPIRED,
 OVS_FLOWCELL_ATTR_ALLOC_FAILS, OVS_FLOWCELL_ATTR_FALLBACKS, OVS_FLOWCELL_ATTR_SEED,
 OVS_FLOWCELL_ATTR_GAP_US, OVS_FLOWCELL_ATTR_GAP_CELLS, OVS_FLOWCELL_ATTR_REFUSED,
 OVS_FLOWCELL_ATTR_PORT_SHARE, OVS_FLOWCELL_ATTR_PORT_EVICTIONS,
 OVS_FLOWCELL_ATTR_PORT_REFUSED) = range(1, 19)
OVS_FLOWCELL_GAP_US_MAX = 10000000
FLOWCELL_NAMES = {
    OVS_FLOWCELL_ATTR_LIMIT: "limit", OVS_FLOWCELL_ATTR_IDLE_MSECS: "idle_msecs",
    OVS_FLOWCELL_ATTR_FLOWS: "flows", OVS_FLOWCELL_ATTR_PACKETS: "packets",
    OVS_FLOWCELL_ATTR_BYTES: "bytes", OVS_FLOWCELL_ATTR_CELLS: "cells",
    OVS_FLOWCELL_ATTR_EVICTIONS: "evictions", OVS_FLOWCELL_ATTR_EXPIRED: "expired",
    OVS_FLOWCELL_ATTR_ALLOC_FAILS: "alloc_fails", OVS_FLOWCELL_ATTR_FALLBACKS: "fallbacks",
    OVS_FLOWCELL_ATTR_SEED: "seed", OVS_FLOWCELL_ATTR_GAP_US: "gap_us",
    OVS_FLOWCELL_ATTR_GAP_CELLS: "gap_cells", OVS_FLOWCELL_ATTR_REFUSED: "refused",
    OVS_FLOWCELL_ATTR_PORT_SHARE: "port_share",
    OVS_FLOWCELL_ATTR_PORT_EVICTIONS: "port_evictions",
    OVS_FLOWCELL_ATTR_PORT_REFUSED: "port_refused",
}
OVS_PACKET_CMD_ACTION, OVS_PACKET_CMD_EXECUTE = 2, 3
OVS_PACKET_ATTR_PACKET, OVS_PACKET_ATTR_KEY, OVS_PACKET_ATTR_ACTIONS = 1, 2, 3
OVS_KEY_ATTR_IN_PORT, OVS_KEY_ATTR_DP_HASH = 3, 19
OVS_ACTION_ATTR_USERSPACE, OVS_ACTION_ATTR_HASH = 2, 8
OVS_USERSPACE_ATTR_PID = 1
OVS_HASH_ALG_L4, OVS_HASH_ALG_FLOWCELL = 0, 2
OVS_DP_F_UNALIGNED = 1 << 0

SRC_MAC = bytes.fromhex("02000000aabb")
DST_MAC = bytes.fromhex("020000000002")
PAYLOAD = 1000


class NetlinkError(OSError):
    def __init__(self, err, msg):
        super().__init__(err, f"{os.strerror(err)}: {msg}")
        self.extack = msg


def nla(t, payload):
    n = 4 + len(payload)
    return struct.pack("=HH", n, t) + payload + b"\0" * (-n % 4)


def u32(t, v):
    return nla(t, struct.pack("=I", v))


def attrs(buf):
    out, off = {}, 0
    while off + 4 <= len(buf):
        n, t = struct.unpack_from("=HH", buf, off)
        if n < 4:
            break
        out[t & NLA_TYPE_MASK] = buf[off + 4:off + n]
        off += (n + 3) & ~3
    return out


class Genl:
    def __init__(self):
        self.s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
        self.s.bind((0, 0))
        self.s.setsockopt(SOL_NETLINK, NETLINK_CAP_ACK, 1)
        self.s.setsockopt(SOL_NETLINK, NETLINK_EXT_ACK, 1)
        self.portid = self.s.getsockname()[0]
        self.seq = 0
        self.families = {}

    def close(self):
        self.s.close()

    def request(self, family, cmd, body, hdr=b"", version=1):
        # NLM_F_ECHO: the datapath answers NEW and SET with a notification,
        # unicast to us only when we ask for an echo.
        self.seq += 1
        payload = struct.pack("=BBH", cmd, version, 0) + hdr + body
        self.s.send(struct.pack("=IHHII", 16 + len(payload), family,
                                NLM_F_REQUEST | NLM_F_ACK | NLM_F_ECHO, self.seq, 0)
                    + payload)
        replies = []
        while True:
            data = self.s.recv(1 << 16)
            off = 0
            while off < len(data):
                n, t, flags, seq, _ = struct.unpack_from("=IHHII", data, off)
                msg = data[off + 16:off + n]
                off += (n + 3) & ~3
                if seq != self.seq:
                    continue
                if t == NLMSG_ERROR:
                    err = -struct.unpack_from("=i", msg)[0]
                    if not err:
                        return replies
                    text = ""
                    if flags & NLM_F_ACK_TLVS:
                        m = attrs(msg[20:]).get(NLMSGERR_ATTR_MSG, b"")
                        text = m.rstrip(b"\0").decode()
                    raise NetlinkError(err, text)
                if t == NLMSG_DONE:
                    return replies
                replies.append(msg[4:])

    def family(self, name):
        if name not in self.families:
            (reply,) = self.request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY,
                                    nla(CTRL_ATTR_FAMILY_NAME, name.encode() + b"\0"))
            self.families[name] = struct.unpack("=H", attrs(reply)[CTRL_ATTR_FAMILY_ID][:2])[0]
        return self.families[name]


def tcp_packet(v6=False, sport=40000, payload=PAYLOAD, proto=6, pad=0):
    if proto == 6:
        l4 = struct.pack("!HHIIBBHHH", sport, 5001, 1, 1, 5 << 4, 0x18, 1000, 0, 0)
    else:
        l4 = struct.pack("!HHHH", sport, 5001, 8 + payload, 0)
    l4 += b"x" * payload
    if v6:
        ip = struct.pack("!IHBB", 6 << 28, len(l4), proto, 64)
        ip += bytes.fromhex("fd000000000000000000000000000001")
        ip += bytes.fromhex("fd000000000000000000000000000002")
        eth_type = 0x86dd
    else:
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 1, 0, 64, proto, 0,
                         socket.inet_aton("10.0.0.1"), socket.inet_aton("10.0.0.2"))
        ip = ip[:10] + struct.pack("!H", inet_csum(ip)) + ip[12:]
        eth_type = 0x0800
    return DST_MAC + SRC_MAC + struct.pack("!H", eth_type) + ip + l4 + b"\0" * pad


class Datapath:
    """A datapath of our own and a second socket for the upcalls."""

    def __init__(self, name):
        self.nl = Genl()
        self.up = Genl()
        self.name = name
        self.dpf = self.nl.family("ovs_datapath")
        self.pkf = self.nl.family("ovs_packet")
        (reply,) = self.nl.request(
            self.dpf, OVS_DP_CMD_NEW,
            nla(OVS_DP_ATTR_NAME, name.encode() + b"\0") + u32(OVS_DP_ATTR_UPCALL_PID, 0)
            + u32(OVS_DP_ATTR_USER_FEATURES, OVS_DP_F_UNALIGNED),
            hdr=struct.pack("=i", 0), version=2)
        self.ifindex = struct.unpack_from("=i", reply)[0]

    def close(self):
        try:
            self.nl.request(self.dpf, OVS_DP_CMD_DEL, b"", hdr=struct.pack("=i", self.ifindex))
        finally:
            self.nl.close()
            self.up.close()

    def hdr(self):
        return struct.pack("=i", self.ifindex)

    def flowcell(self):
        (reply,) = self.nl.request(self.dpf, OVS_DP_CMD_GET, b"", hdr=self.hdr(), version=2)
        nest = attrs(attrs(reply[4:])[OVS_DP_ATTR_FLOWCELL])
        out = {}
        for t, v in nest.items():
            if t in FLOWCELL_NAMES:
                out[FLOWCELL_NAMES[t]] = struct.unpack("=Q" if len(v) == 8 else "=I", v)[0]
        return out

    def set_flowcell(self, body):
        self.nl.request(self.dpf, OVS_DP_CMD_SET, nla(OVS_DP_ATTR_FLOWCELL, body),
                        hdr=self.hdr(), version=2)

    def hash_only(self, packet, in_port=0, basis=4096):
        """The flowcell hash action alone (no upcall)."""
        self.nl.request(self.pkf, OVS_PACKET_CMD_EXECUTE,
                        nla(OVS_PACKET_ATTR_PACKET, packet)
                        + nla(OVS_PACKET_ATTR_KEY, u32(OVS_KEY_ATTR_IN_PORT, in_port))
                        + nla(OVS_PACKET_ATTR_ACTIONS, nla(OVS_ACTION_ATTR_HASH, struct.pack(
                            "=II", OVS_HASH_ALG_FLOWCELL, basis))),
                        hdr=self.hdr())

    def execute(self, packet, alg=OVS_HASH_ALG_FLOWCELL, basis=4096, in_port=0):
        """The (dp_hash, packet) the hash action leaves, seen by userspace()."""
        actions = nla(OVS_ACTION_ATTR_HASH, struct.pack("=II", alg, basis))
        actions += nla(OVS_ACTION_ATTR_USERSPACE, u32(OVS_USERSPACE_ATTR_PID, self.up.portid))
        self.nl.request(self.pkf, OVS_PACKET_CMD_EXECUTE,
                        nla(OVS_PACKET_ATTR_PACKET, packet)
                        + nla(OVS_PACKET_ATTR_KEY, u32(OVS_KEY_ATTR_IN_PORT, in_port))
                        + nla(OVS_PACKET_ATTR_ACTIONS, actions),
                        hdr=self.hdr())
        r, _, _ = select.select([self.up.s], [], [], 10)
        assert r, "no upcall from the userspace() action"
        data = self.up.s.recv(1 << 17)
        n, t = struct.unpack_from("=IH", data)
        assert t == self.pkf
        assert data[16] == OVS_PACKET_CMD_ACTION
        a = attrs(data[20 + 4:n])
        key = attrs(a[OVS_PACKET_ATTR_KEY])
        return struct.unpack("=I", key[OVS_KEY_ATTR_DP_HASH])[0], a[OVS_PACKET_ATTR_PACKET]


@pytest.fixture(scope="module", autouse=True)
def openvswitch():
    subprocess.run(["modprobe", "openvswitch"], check=True)


@pytest.fixture
def dp():
    d = Datapath("fcdp0")
    yield d
    d.close()


STAMP_TAG = b"\xfc\xce"     # OVS_FLOWCELL_STAMP_TAG, source MAC bytes 2-3


def cell_of(packet):
    assert packet[6:8] == SRC_MAC[:2], "only the source MAC's bytes 2-5 may change"
    assert packet[8:10] == STAMP_TAG, "a stamped frame carries the tag"
    return struct.unpack("!H", packet[10:12])[0]


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_flowcells_consecutive_hashes_and_mac(dp, v6):
    # 4096-byte flowcells of 1000-byte packets: four fit, the fifth would
    # take the flowcell past 4096 bytes and starts flowcell 1.
    seen = [dp.execute(tcp_packet(v6)) for _ in range(12)]
    cells = [cell_of(p) for _, p in seen]
    assert cells == [0] * 4 + [1] * 4 + [2] * 4
    hashes = [h for h, _ in seen]
    assert all(h & 0x80000000 for h in hashes)
    h0 = hashes[0]
    for h, c in zip(hashes, cells):
        assert (h - h0) & 0x7fffffff == c
    # Everything but the stamp (source MAC bytes 2-5) is untouched.
    for _, p in seen:
        assert p[:8] == tcp_packet(v6)[:8] and p[12:] == tcp_packet(v6)[12:]
    # A TSO-sized packet (one skb, 20000 bytes of payload) is one decision,
    # never split: each fills a flowcell of its own (3, then 4).
    big = [dp.execute(tcp_packet(v6, payload=20000)) for _ in range(2)]
    assert [cell_of(p) for _, p in big] == [3, 4]
    fc = dp.flowcell()
    assert fc["flows"] == 1
    assert fc["packets"] == 14
    assert fc["bytes"] == 12 * PAYLOAD + 2 * 20000
    assert fc["cells"] == 5
    assert fc["fallbacks"] == 0
    assert fc["limit"] == 8192


def test_other_packets_take_the_l4_hash_unmodified(dp):
    # A pure ACK padded to the Ethernet minimum, UDP: not flowcell packets.
    for pkt in (tcp_packet(payload=0, pad=6), tcp_packet(proto=17)):
        h, p = dp.execute(pkt)
        assert p == pkt
        h_l4, _ = dp.execute(pkt, alg=OVS_HASH_ALG_L4, basis=4096)
        assert h == h_l4
    fc = dp.flowcell()
    assert fc["fallbacks"] == 2
    assert fc["flows"] == 0 and fc["packets"] == 0


def test_flows_are_separate_and_the_limit_evicts_lru(dp):
    dp.set_flowcell(u32(OVS_FLOWCELL_ATTR_LIMIT, 2))
    assert dp.flowcell()["limit"] == 2
    for sport in (1, 2, 1, 3):          # 3 evicts 2, the least recently used
        dp.execute(tcp_packet(sport=sport, payload=3000))
    fc = dp.flowcell()
    assert fc["flows"] == 2
    assert fc["evictions"] == 1
    # Flow 1 kept its state (two 3000-byte packets do not fit in 4096
    # bytes: its second started flowcell 1, its third starts flowcell 2);
    # flow 2 starts over at flowcell 0.
    assert cell_of(dp.execute(tcp_packet(sport=1, payload=3000))[1]) == 2
    assert cell_of(dp.execute(tcp_packet(sport=2, payload=3000))[1]) == 0
    assert dp.flowcell()["evictions"] == 2


def test_a_port_flood_leaves_other_ports_flows_alone(dp):
    """10,000 new flows from in_port 2 beside a victim flow from in_port 1:
    the flood holds at most its share of the limit (50% by default) and
    churns its own flows; the victim keeps its flowcell (no restart)."""
    fc = dp.flowcell()
    assert fc["port_share"] == 50 and fc["limit"] == 8192
    # the flood is slow under emulation: no flow may go idle meanwhile
    dp.set_flowcell(u32(OVS_FLOWCELL_ATTR_IDLE_MSECS, 3600000))
    victim = [dp.execute(tcp_packet(sport=1, payload=3000), in_port=1) for _ in range(3)]
    assert [cell_of(p) for _, p in victim] == [0, 1, 2]
    for i in range(10000):
        dp.hash_only(tcp_packet(sport=1000 + i, payload=100), in_port=2)
    fc = dp.flowcell()
    assert fc["flows"] == 1 + 4096
    assert fc["port_evictions"] + fc["port_refused"] == 10000 - 4096
    assert fc["port_evictions"] > 0
    assert fc["evictions"] == 0 and fc["refused"] == 0
    h, p = dp.execute(tcp_packet(sport=1, payload=3000), in_port=1)
    assert cell_of(p) == 3
    assert h == ((victim[2][0] + 1) & 0x7fffffff) | 0x80000000
    # the whole table for one port: the flood then takes its own flows
    dp.set_flowcell(u32(OVS_FLOWCELL_ATTR_PORT_SHARE, 100))
    for i in range(6000):
        dp.hash_only(tcp_packet(sport=20000 + i, payload=100), in_port=2)
    fc = dp.flowcell()
    assert fc["flows"] == 8192 and fc["evictions"] > 0
    assert cell_of(dp.execute(tcp_packet(sport=1, payload=3000), in_port=1)[1]) == 4
    # a lower share evicts the flood's oldest flows at once
    dp.set_flowcell(u32(OVS_FLOWCELL_ATTR_PORT_SHARE, 10))
    assert dp.flowcell()["flows"] == 1 + 819
    assert cell_of(dp.execute(tcp_packet(sport=1, payload=3000), in_port=1)[1]) == 5


def test_idle_flows_are_freed(dp):
    dp.set_flowcell(u32(OVS_FLOWCELL_ATTR_IDLE_MSECS, 50))
    for sport in range(3):
        dp.execute(tcp_packet(sport=sport))
    deadline = time.monotonic() + 10
    while dp.flowcell()["flows"] and time.monotonic() < deadline:
        time.sleep(0.1)
    fc = dp.flowcell()
    assert fc["flows"] == 0
    assert fc["expired"] == 3
    assert fc["idle_msecs"] == 50


def test_bad_flowcell_sizes_are_refused(dp):
    for basis in (1, 1023, (16 << 20) + 1, 0xffffffff):
        with pytest.raises(OSError) as e:
            dp.execute(tcp_packet(), basis=basis)
        assert e.value.errno == errno.EINVAL
    for basis in (0, 1024, 16 << 20):
        dp.execute(tcp_packet(), basis=basis)


@pytest.mark.parametrize("body, err, message", [
    (u32(OVS_FLOWCELL_ATTR_LIMIT, 0), errno.ERANGE, "out of range"),
    (u32(OVS_FLOWCELL_ATTR_LIMIT, (1 << 20) + 1), errno.ERANGE, "out of range"),
    (u32(OVS_FLOWCELL_ATTR_IDLE_MSECS, 1), errno.ERANGE, "out of range"),
    (nla(OVS_FLOWCELL_ATTR_LIMIT, b"\1\0"), errno.EINVAL, ""),
    (nla(OVS_FLOWCELL_ATTR_FLOWS, struct.pack("=Q", 5)), errno.EINVAL, "Read-only"),
    (nla(OVS_FLOWCELL_ATTR_SEED, b"\1\0"), errno.EINVAL, ""),
    (u32(OVS_FLOWCELL_ATTR_GAP_US, OVS_FLOWCELL_GAP_US_MAX + 1), errno.ERANGE, "out of range"),
    (u32(OVS_FLOWCELL_ATTR_GAP_US, 0xffffffff), errno.ERANGE, "out of range"),
    (nla(OVS_FLOWCELL_ATTR_GAP_US, b"\1\0"), errno.EINVAL, ""),
    (nla(OVS_FLOWCELL_ATTR_GAP_CELLS, struct.pack("=Q", 5)), errno.EINVAL, "Read-only"),
    (u32(OVS_FLOWCELL_ATTR_PORT_SHARE, 0), errno.ERANGE, "out of range"),
    (u32(OVS_FLOWCELL_ATTR_PORT_SHARE, 101), errno.ERANGE, "out of range"),
    (nla(OVS_FLOWCELL_ATTR_PORT_REFUSED, struct.pack("=Q", 5)), errno.EINVAL, "Read-only"),
    (nla(OVS_FLOWCELL_ATTR_PORT_REFUSED + 1, b"\0\0\0\0"), errno.EINVAL, ""),
], ids=["limit-0", "limit-too-big", "idle-too-short", "short-u32", "read-only", "short-seed",
        "gap-too-big", "gap-u32-max", "short-gap", "gap-cells-read-only", "share-0", "share-101",
        "port-refused-read-only", "unknown"])
def test_malformed_attributes_are_refused(dp, body, err, message):
    before = dp.flowcell()
    with pytest.raises(NetlinkError) as e:
        dp.set_flowcell(body)
    assert e.value.errno == err
    assert e.value.extack, "an extack message says why"
    assert message in e.value.extack
    assert dp.flowcell() == before


def test_seeded_starts_repeat(dp):
    """OVS_FLOWCELL_ATTR_SEED: 0 (the default) draws a new flow's start
    at random; a seed makes it a hash of the flow, the same in another
    datapath with the same seed and when the flow starts over; another
    seed moves it."""
    def first_hashes(d, sports):
        # limit 1: each flow evicts the previous one, so each starts anew
        return [d.execute(tcp_packet(sport=sp))[0] for sp in sports]

    assert dp.flowcell()["seed"] == 0
    dp.set_flowcell(u32(OVS_FLOWCELL_ATTR_LIMIT, 1))
    unseeded = first_hashes(dp, [7, 8] * 8)
    assert len(set(unseeded[0::2])) > 1, "seed 0: a restarted flow draws a new start"

    dp.set_flowcell(u32(OVS_FLOWCELL_ATTR_SEED, 42))
    assert dp.flowcell()["seed"] == 42
    sports = list(range(100, 108))
    a = first_hashes(dp, sports + sports)
    assert a[:8] == a[8:], "a flow that starts over takes the same start"
    assert len(set(a[:8])) > 1, "flows have their own starts"
    assert dp.flowcell()["evictions"] >= 15
    other = Datapath("fcdp2")
    try:
        other.set_flowcell(u32(OVS_FLOWCELL_ATTR_LIMIT, 1) + u32(OVS_FLOWCELL_ATTR_SEED, 42))
        assert first_hashes(other, sports) == a[:8], "the same seed, another datapath: the same starts"
        other.set_flowcell(u32(OVS_FLOWCELL_ATTR_SEED, 43))
        assert first_hashes(other, sports) != a[:8], "another seed: other starts"
    finally:
        other.close()
    # still consecutive flowcells from the seeded start
    dp.set_flowcell(u32(OVS_FLOWCELL_ATTR_LIMIT, 8192))
    seen = [dp.execute(tcp_packet(sport=200))[0] for _ in range(12)]
    assert [(h - seen[0]) & 0x7fffffff for h in seen] == [0] * 4 + [1] * 4 + [2] * 4
    dp.set_flowcell(u32(OVS_FLOWCELL_ATTR_SEED, 0))
    assert dp.flowcell()["seed"] == 0


# The flowlet gap of the tests: far above the time between two executions
# in the debug guest (milliseconds), far below the pauses they make.
GAP_S = 0.3


def timed_execute(dp, packet):
    """(send time, return time, dp_hash, packet): the kernel stamped the
    packet between the two"""
    t0 = time.monotonic()
    h, p = dp.execute(packet)
    return t0, time.monotonic(), h, p


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_flowlets_follow_the_gap(dp, v6):
    """With OVS_FLOWCELL_ATTR_GAP_US a flow that sends without pause stays
    in its first flowcell, however many flowcell sizes it sends; after a
    pause longer than the gap it moves to the next flowcell (hash + 1, the
    next path of a select group, ID + 1 in the source MAC)."""
    dp.set_flowcell(u32(OVS_FLOWCELL_ATTR_GAP_US, int(GAP_S * 1e6)))
    fc = dp.flowcell()
    assert fc["gap_us"] == int(GAP_S * 1e6) and fc["gap_cells"] == 0
    # 24 packets of 1000 bytes: six 4096-byte flowcells' worth, no pause
    seen = [timed_execute(dp, tcp_packet(v6)) for _ in range(24)]
    # every interval the kernel can have seen is below the gap (else the
    # guest stalled and the run proves nothing: fail, do not guess)
    assert max(r1 - s0 for (s0, _, _, _), (_, r1, _, _) in zip(seen, seen[1:])) < GAP_S
    assert [cell_of(p) for _, _, _, p in seen] == [0] * 24
    h0 = seen[0][2]
    assert all(h == h0 for _, _, h, _ in seen) and h0 & 0x80000000
    fc = dp.flowcell()
    assert fc["cells"] == 1 and fc["gap_cells"] == 0 and fc["packets"] == 24
    # a pause longer than the gap: the next packet starts flowcell 1, the
    # ones right after it stay there; a second pause, flowcell 2
    time.sleep(GAP_S * 2)
    after = [timed_execute(dp, tcp_packet(v6)) for _ in range(6)]
    assert after[0][0] - seen[-1][1] > GAP_S
    assert [cell_of(p) for _, _, _, p in after] == [1] * 6
    assert all((h - h0) & 0x7fffffff == 1 for _, _, h, _ in after)
    time.sleep(GAP_S * 2)
    _, _, h, p = timed_execute(dp, tcp_packet(v6))
    assert cell_of(p) == 2 and (h - h0) & 0x7fffffff == 2
    fc = dp.flowcell()
    assert fc["cells"] == 3 and fc["gap_cells"] == 2 and fc["flows"] == 1
    # pure ACKs are not data: they neither start a flowlet nor stamp the flow
    dp.execute(tcp_packet(v6, payload=0, pad=6))
    assert dp.flowcell()["fallbacks"] == 1


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_gap_zero_keeps_flowcells(dp, v6):
    """Gap 0 (the default, and set back to 0) is the stock flowcell
    decision: sizes end flowcells, pauses do not."""
    assert dp.flowcell()["gap_us"] == 0
    dp.set_flowcell(u32(OVS_FLOWCELL_ATTR_GAP_US, int(GAP_S * 1e6)))
    dp.set_flowcell(u32(OVS_FLOWCELL_ATTR_GAP_US, 0))
    assert dp.flowcell()["gap_us"] == 0
    seen = []
    for i in range(12):
        if i in (2, 7):
            time.sleep(GAP_S * 2)
        seen.append(dp.execute(tcp_packet(v6)))
    cells = [cell_of(p) for _, p in seen]
    assert cells == [0] * 4 + [1] * 4 + [2] * 4
    assert [(h - seen[0][0]) & 0x7fffffff for h, _ in seen] == cells
    fc = dp.flowcell()
    assert fc["cells"] == 3 and fc["gap_cells"] == 0


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_gap_set_on_a_running_flow_counts_from_the_set(dp, v6):
    """Flowcell mode does not read the clock, so a gap set while a flow
    exists counts from the moment it was set: the flow's idle time before
    the set is not a pause (no flowlet at its next packet), a pause of
    more than the gap after the set is."""
    assert dp.flowcell()["gap_us"] == 0
    before = [dp.execute(tcp_packet(v6)) for _ in range(2)]
    time.sleep(GAP_S * 2)                   # idle, but not in flowlet mode
    t_set = time.monotonic()
    dp.set_flowcell(u32(OVS_FLOWCELL_ATTR_GAP_US, int(GAP_S * 1e6)))
    seen = [timed_execute(dp, tcp_packet(v6)) for _ in range(3)]
    # the kernel stamped the set and these packets within the gap (else
    # the guest stalled and the run proves nothing: fail, do not guess)
    assert seen[-1][1] - t_set < GAP_S
    assert [cell_of(p) for _, p in before] + [cell_of(p) for _, _, _, p in seen] == [0] * 5
    h0 = before[0][0]
    assert all(h == h0 for _, _, h, _ in seen)
    fc = dp.flowcell()
    assert fc["cells"] == 1 and fc["gap_cells"] == 0 and fc["flows"] == 1
    time.sleep(GAP_S * 2)
    _, _, h, p = timed_execute(dp, tcp_packet(v6))
    assert cell_of(p) == 1 and (h - h0) & 0x7fffffff == 1
    fc = dp.flowcell()
    assert fc["cells"] == 2 and fc["gap_cells"] == 1


def test_datapath_deleted_with_flows():
    d = Datapath("fcdp1")
    for sport in range(50):
        d.execute(tcp_packet(sport=sport))
    assert d.flowcell()["flows"] == 50
    d.close()
