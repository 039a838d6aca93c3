"""dcnet/testbed/grocap.py: what GRO pushes up, from a capture at the receiver
(Presto Fig. 5): sizes, out-of-order skbs, the per-flowcell count."""
import json
import os
import struct

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dcnet.testbed import grocap


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
    assert r["late_skbs"] == 2           # ... with flowcell 0's ID after flowcell 1 was seen
    # flowcell 0 spans arrivals 0..5 with 2 skbs of flowcell 1 inside;
    # flowcell 1 spans 2..7 with 2 of flowcell 0 inside
    assert r["flowcells"] == 2 and r["fc_ooo_p50"] == 2 and r["fc_ooo_zero_share"] == 0


def test_reorder_durations_against_the_hold():
    m = 1448
    ms = 1e-3
    # flowcell boundary holes: fc1 overtakes the tail of fc0 by 10 ms
    # (original data fills it), fc2 overtakes fc1 by 30 ms, fc3's hole is
    # filled by a retransmission (the sender's newest ID, 3)
    arr = [(0, 0, 0), (2, 2 * m, 1), (12, m, 0), (13, 3 * m, 1), (14, 5 * m, 2),
           (44, 4 * m, 1), (45, 7 * m, 3), (60, 6 * m, 3)]
    pk = []
    for t, seq, fc in arr:
        orig, data = frame(seq, m, fc)
        pk.append((t * ms, orig, data))
    r = grocap.reorder({"h1": pk})
    assert r["holes"] == 3 and r["lossless"] == 2 and r["by_retransmission"] == 1
    assert abs(r["lossless_us"]["p50_us"] - 10000) < 1 and abs(r["lossless_us"]["max_us"] - 30000) < 1
    # the first hole outlasts the initial 100 us hold; the EWMA is then
    # 10 ms, so the hold 20 ms: the 30 ms hole outlasts it too
    assert r["outlast_hold"] == 2 and r["outlast_share"] == 1.0
    assert abs(r["ewma_end_us"] - (10000 + 20000 / 8)) < 1
    # alpha 4: a 40 ms hold covers the 30 ms hole
    assert grocap.reorder({"h1": pk}, alpha=4)["outlast_hold"] == 1


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


def presto_raw():
    """a raw document with the receiver's and the CPU's fields: four
    schemes on one workload, each naming its cpu_baseline"""
    flows = [dict(id=0, src="h1", dst="h9", kind="elephant", bytes=12_000_000, duration_s=10.0, tput_bps=9.6e6,
                  fct_us=None, intervals_bps=[], deadline_us=None, met_deadline=None)]
    schemes = [dict(name="optimal"), dict(name="ovs", cpu_baseline="optimal"),
               dict(name="presto", cpu_baseline="ovs"), dict(name="presto-gro", cpu_baseline="presto")]
    meta = dict(platform="emulated", kernel="6.12", hosts=["h1", "h9"], link_mbit=10, paper_link_mbit=10000,
                scale=0.001, started="2026-11-24T00:00:00Z", experiment=dict(schemes=schemes))
    runs = []
    m = 1448
    order = [(0, 0), (4 * m, 1), (m, 0), (2 * m, 0), (3 * m, 0), (5 * m, 1)]
    cap = grocap.analyse({"h9": grocap.read_pcap(pcap([frame(q, m, fc) for q, fc in order]))})
    cap.update(dropped=0, hosts=1, errors=[],
               flowlets=grocap.flowlets({"h9": [(i * 1e-3, o, f) for i, (o, f) in
                                                enumerate(grocap.read_pcap(pcap([frame(q, m, fc)
                                                                                 for q, fc in order])))]},
                                        gaps_us=(500, 5000), min_bytes=0))
    for i, s in enumerate(schemes):
        busy = 100 + 10 * i                  # ticks: each scheme 10 more than the one before
        runs.append(dict(scheme=s["name"], workload="stride", duration_s=10.0, flows=json.loads(json.dumps(flows)),
                         ports=[], rtt_us=None, cpu={"guest": 0.3},
                         cpu_jiffies=dict(user=20, nice=0, system=30, idle=1000, iowait=0, irq=0,
                                          softirq=busy - 50, steal=0, total=1000 + busy, ncpu=2),
                         host_counters=dict(nstat=dict(totals=dict(
                             TcpExtTCPOFOQueue=[40, 30, 20, 0][i], TcpRetransSegs=5, IpInReceives=1000,
                             IpExtInOctets=3_000_000, IpExtInNoECTPkts=2000)),
                             flowcell=dict(lookup_hit=100, lookup_missed=16, lookup_lost=2),
                             presto_gro={"h9": dict(enabled=1 if s["name"] == "presto-gro" else 0, held=7,
                                                    pushed_timeout=1, pushed_loss=0, pushed_old=0,
                                                    reorder_events=3, ewma_us=2000)}),
                         gro_capture=cap if s["name"] == "presto" else None))
    return dict(meta=meta, runs=runs)


def test_report_receiver_and_cpu_cost(tmp_path):
    from dcnet.testbed import report
    res = report.build(presto_raw(), str(tmp_path), plot=False)
    report.validate(json.load(open(tmp_path / "results.json")), "results")
    by = {r["scheme"]: r for r in res["runs"]}
    rx = by["presto"]["receiver"]
    assert rx["tcp_ofo_queue"] == 20 and rx["ip_mean_skb_bytes"] == 3000 and rx["ip_segs_per_skb"] == 2
    assert rx["capture"]["ooo_skbs"] == 1 and rx["capture"]["flowcells"] == 2
    assert "presto_gro" not in rx                          # Presto GRO off: no counters summed
    assert by["presto-gro"]["receiver"]["presto_gro"]["held"] == 7
    assert by["presto-gro"]["receiver"]["presto_gro"]["ewma_us_mean"] == 2000
    c = by["ovs"]["cpu_cost"]
    assert c["busy_s"] == pytest.approx(1.1) and c["delivered_bytes"] == 12_000_000
    assert c["us_per_segment"] == pytest.approx(1.1e6 / (12e6 / 1448))
    assert "cpu_overhead" not in by["optimal"]
    assert by["ovs"]["cpu_overhead"]["baseline"] == "optimal"
    assert by["ovs"]["cpu_overhead"]["ratio"] == pytest.approx(110 / 100 - 1)
    assert by["presto-gro"]["cpu_overhead"]["ratio"] == pytest.approx(130 / 120 - 1)
    assert by["presto-gro"]["cpu_overhead"]["softirq_ratio"] == pytest.approx(80 / 70 - 1)
    md = (tmp_path / "report.md").read_text()
    assert "## Receiver: what reaches TCP (Presto Fig. 5)" in md and "## CPU cost (Presto Fig. 6)" in md
    assert "| presto-gro | stride | 9.60 | 0 |" in md
    assert "| presto | stride | 9.60 | 1.20 (0.70 / 0.30 / 0.20) | 12.0 |" in md
    assert "| +8.3% (+14.3%) | 16 (2) |" in md              # presto-gro: upcalls (lost) of the datapath
    assert "+9.1%" in md and "Paper (Fig. 6)" in md
    assert rx["capture"]["late_skbs"] == 3                 # m, 2m, 3m (ID 0) after ID 1 was seen
    assert "| presto | stride | 6 per flow, 1 KB, largest 17% | 1 per flow, 9 KB, largest 100% |" in md


def test_report_sender_flowcells_and_gap_cells(tmp_path):
    """the Presto sender's section: per run the flowcell datapath's data
    skbs, flowcells and gap_cells (flowlets started by the gap) with their
    share; no row for a run without flowcell decisions"""
    from dcnet.testbed import report
    raw = presto_raw()
    by = {r["scheme"]: r for r in raw["runs"]}
    by["optimal"]["host_counters"].pop("flowcell")
    by["ovs"]["host_counters"]["flowcell"].update(packets=0, cells=0, bytes=0)       # a stock OVS run
    by["presto"]["host_counters"]["flowcell"].update(packets=2000, bytes=64_000_000, cells=1000, seed=1)
    by["presto-gro"]["host_counters"]["flowcell"].update(packets=2000, bytes=60_000_000, cells=800, gap=2000,
                                                         gap_cells=750)
    by["presto-gro"]["flowlet_gap_us"] = 2000
    res = report.build(raw, str(tmp_path), plot=False)
    report.validate(json.load(open(tmp_path / "results.json")), "results")
    out = {r["scheme"]: r for r in res["runs"]}
    assert out["optimal"]["flowcells"] is None and out["ovs"]["flowcells"] is None
    p = out["presto"]["flowcells"]
    assert p["cells"] == 1000 and p["gap_cells"] is None and p["gap_cells_share"] is None
    assert p["mean_cell_bytes"] == 64_000 and p["gap_us"] is None
    f = out["presto-gro"]["flowcells"]
    assert f["gap_us"] == 2000 and f["gap_cells"] == 750 and f["data_skbs"] == 2000
    assert f["gap_cells_share"] == pytest.approx(750 / 800) and f["gap_cells_per_skb"] == pytest.approx(0.375)
    md = (tmp_path / "report.md").read_text()
    assert "## Sender: flowcells and flowlets (Presto datapath)" in md
    assert "| presto | stride | 9.60 | - | 2000 | 1000 | - | - | - | 64.0 KB |" in md
    assert "| presto-gro | stride | 9.60 | 2 ms | 2000 | 800 | 750 | 93.8% | 37.5% | 75.0 KB |" in md
    assert "| optimal | stride | 9.60 | - |" not in md.split("## Sender")[1].split("##")[0]
    assert "| ovs |" not in md.split("## Sender")[1].split("##")[0]


def test_report_without_receiver_fields_has_no_sections(tmp_path):
    from dcnet.testbed import report
    raw = presto_raw()
    for r in raw["runs"]:
        for k in ("cpu_jiffies", "host_counters", "gro_capture"):
            r.pop(k)
    res = report.build(raw, str(tmp_path), plot=False)
    assert all(r["receiver"] is None and r["cpu_cost"] is None and r["flowcells"] is None for r in res["runs"])
    assert "Presto Fig. 5" not in (tmp_path / "report.md").read_text()
    assert "## Sender" not in (tmp_path / "report.md").read_text()


def test_report_plots_fig5(tmp_path):
    pytest.importorskip("matplotlib")
    from dcnet.testbed import report
    report.build(presto_raw(), str(tmp_path), plot=True)
    assert (tmp_path / "gro_fig5.png").stat().st_size > 1000


def test_experiments_presto_rx_and_cpu_are_valid():
    from dcnet.testbed.experiment import load, validate_experiment
    for name in ("presto-rx.json", "presto-cpu.json"):
        path = os.path.join(ROOT, "testbed", "experiments", name)
        validate_experiment(load(path), name=path)
    cpu = load(os.path.join(ROOT, "testbed", "experiments", "presto-cpu.json"))
    assert cpu["topology"]["kind"] == "single" and not cpu.get("gro_capture")
    assert {s["name"]: s.get("cpu_baseline") for s in cpu["schemes"]} == {
        "optimal": None, "ovs": "optimal", "presto": "ovs", "presto-gro": "presto"}
    assert load(os.path.join(ROOT, "testbed", "experiments", "presto-rx.json"))["gro_capture"] is True


def test_experiment_presto_cpu_clos_compares_the_gros_under_reordering():
    from dcnet.testbed.experiment import load, validate_experiment
    path = os.path.join(ROOT, "testbed", "experiments", "presto-cpu-clos.json")
    cpu = load(path)
    validate_experiment(cpu, name=path)
    # on the Clos (reordering), without the capture and the RTT probe
    assert cpu["topology"]["kind"] == "clos"
    assert not cpu.get("gro_capture") and cpu.get("rtt_probe") is False
    assert {s["name"]: s.get("cpu_baseline") for s in cpu["schemes"]} == {
        "l2ecmp": None, "presto": "l2ecmp", "presto-gro": "presto"}
    gro = {s["name"]: bool(s.get("presto_gro")) for s in cpu["schemes"]}
    assert gro == {"l2ecmp": False, "presto": False, "presto-gro": True}


def test_cpu_baseline_must_name_another_scheme():
    from dcnet.testbed.experiment import ExperimentError, validate_experiment
    exp = dict(schemes=[dict(name="a"), dict(name="b", cpu_baseline="c")], workloads=[dict(name="stride")])
    with pytest.raises(ExperimentError, match="cpu_baseline"):
        validate_experiment(exp, name="x")
    exp["schemes"][1]["cpu_baseline"] = "b"
    with pytest.raises(ExperimentError, match="cpu_baseline"):
        validate_experiment(exp, name="x")
    exp["schemes"][1]["cpu_baseline"] = "a"
    validate_experiment(exp, name="x")


def test_flowlets_split_at_inactivity_gaps():
    m = 1448
    # one flow: 3 skbs 50 us apart, a 300 us pause, 2 skbs, a 2 ms pause, 1 skb
    times = [0, 50e-6, 100e-6, 400e-6, 450e-6, 2.45e-3]
    out = struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 80, 1)
    for i, t in enumerate(times):
        orig, data = frame(i * m, m, 0)
        out += struct.pack("<IIII", int(t), int(round((t % 1) * 1e6)), len(data), orig) + data
    pk = grocap.read_pcap(out, with_ts=True)
    assert pk[1][0] == pytest.approx(50e-6)
    assert grocap.flowlets({"h9": pk}, gaps_us=(100,))["100"]["flowlets"] == 0     # not an elephant
    f = grocap.flowlets({"h9": pk}, gaps_us=(100, 500, 5000), min_bytes=0)
    assert f["100"]["flowlets"] == 3 and f["100"]["max_bytes"] == 3 * m
    assert f["500"]["flowlets"] == 2 and f["500"]["largest_share"] == pytest.approx(5 / 6)
    assert f["5000"]["flowlets"] == 1 and f["5000"]["per_flow"] == 1


def test_retransmission_with_a_newer_id_is_not_late():
    m = 1448
    # skb 1m lost; flowcell 1 goes on; the retransmission of 1m carries ID 1
    order = [(0, 0, 0), (2 * m, 0, 0), (3 * m, 1, 0), (m, 1, 0)]
    fr = [frame(q, m, fc) for q, fc, _ in order]
    r = grocap.analyse({"h9": grocap.read_pcap(pcap(fr))})
    assert r["ooo_skbs"] == 1 and r["old_skbs"] == 1 and r["late_skbs"] == 0
