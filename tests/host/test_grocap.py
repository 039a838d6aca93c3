"""testbed/grocap.py: what GRO pushes up, from a capture at the receiver
(Presto Fig. 5): sizes, out-of-order skbs, the per-flowcell count."""
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "testbed"))

import grocap  # noqa: E402


def frame(seq, payload, fc, sport=20001, dport=5201, snap=80):
    """an Ethernet/IPv4/TCP frame cut at snap bytes, and its full length"""
    eth = b"\x02\xdc\x00\x00\x00\x02" + b"\x02\xdc\x00\x00" + struct.pack(">H", fc) + b"\x08\x00"
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq, 1, 8 << 4, 0x10, 1000, 0, 0) + b"\x01\x01\x08\x0a" + bytes(8)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + payload, 0, 0, 64, 6, 0,
                     bytes([10, 2, 0, 1]), bytes([10, 2, 0, 9]))
    full = eth + ip + tcp
    return len(full) + payload, (full + bytes(payload))[:snap]


def pcap(frames):
    out = struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 80, 1)
    for orig, data in frames:
        out += struct.pack("<IIII", 0, 0, len(data), orig) + data
    return out


def test_read_pcap_round_trip():
    fr = [frame(1000, 2896, 0), frame(3896, 0, 0)]
    got = grocap.read_pcap(pcap(fr))
    assert [(o, len(d)) for o, d in got] == [(fr[0][0], 80), (fr[1][0], fr[1][0])]
    assert grocap.parse(got[0][1], got[0][0])[1:] == (1000, 2896, 0)


def test_in_order_flowcells_count_zero():
    m = 1448
    fr = [frame(i * 2 * m, 2 * m, i // 2) for i in range(8)]     # 2 skbs per flowcell, in order
    r = grocap.analyse({"h9": grocap.read_pcap(pcap(fr))})
    assert r["data_skbs"] == 8 and r["mean_bytes"] == 2 * m and r["one_mss_share"] == 0
    assert r["ooo_skbs"] == 0 and r["old_skbs"] == 0
    assert r["flowcells"] == 4 and r["fc_ooo_zero_share"] == 1.0 and r["fc_ooo_max"] == 0


def test_swapped_flowcells_counted_as_reordering():
    m = 1448
    # flowcell 0 = seq 0..4m (4 skbs of 1 MSS), flowcell 1 = 4m..8m: the
    # second half of flowcell 0 arrives after two skbs of flowcell 1
    order = [(0, 0), (m, 0), (4 * m, 1), (5 * m, 1), (2 * m, 0), (3 * m, 0), (6 * m, 1), (7 * m, 1)]
    fr = [frame(s, m, fc) for s, fc in order] + [frame(8 * m, 0, 1)]     # a pure ACK: ignored
    r = grocap.analyse({"h9": grocap.read_pcap(pcap(fr))})
    assert r["data_skbs"] == 8 and r["one_mss_share"] == 1.0
    assert r["ooo_skbs"] == 1            # 4m arrives with 2m..4m missing
    assert r["old_skbs"] == 2            # 2m and 3m come after 6m was expected
    # flowcell 0 spans arrivals 0..5 with 2 skbs of flowcell 1 inside;
    # flowcell 1 spans 2..7 with 2 of flowcell 0 inside
    assert r["flowcells"] == 2 and r["fc_ooo_p50"] == 2 and r["fc_ooo_zero_share"] == 0


def test_sequence_wrap_and_single_id_flows():
    m = 1448
    base = 0xffffffff - m + 1
    fr = [frame(base, m, 7), frame(0, m, 7), frame(m, m, 7)]      # wraps, one ID: no flowcell count
    r = grocap.analyse({"h1": grocap.read_pcap(pcap(fr))})
    assert r["ooo_skbs"] == 0 and r["old_skbs"] == 0 and r["flowcells"] == 0
    assert r["fc_ooo_zero_share"] is None


def test_cdf_is_monotone_and_ends_at_one():
    xs = sorted([1448] * 30 + [2896] * 60 + [65160] * 10)
    c = grocap.cdf(xs)
    assert c[-1] == [65160, 1.0]
    assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(c, c[1:]))
    assert grocap.percentile(xs, 50) == 2896
