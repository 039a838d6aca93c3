"""The benches' virtual CPU: every cell's busy fraction (issue 15, item 4)
reaches results.json, and report.md names exactly the cells above
dcnet.stats.CPU_LIMIT.  Synthetic raw records, no guest."""
import json
import os
import re
import statistics

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dcnet.bench import d2tcp
from dcnet.bench import fastlane
from dcnet.bench import htb
from dcnet import stats
from test_bench_fastlane import raw_doc as fastlane_raw

HOT, COOL = 0.83, 0.31


def flagged(text):
    """the cells report.md names as above the limit; None when it says
    that every cell stayed below"""
    if "stayed at or below 50% busy in every cell" in text:
        return None
    m = re.search(r"Virtual CPU above 50% busy in: (.*); there the guest's CPU may set the result\.", text)
    assert m, text
    return [re.sub(r" \(\d+%\)$", "", c) for c in m.group(1).split(", ")]


def report_text(mod, res, tmp_path):
    mod.report(res, [], str(tmp_path))
    return (tmp_path / "report.md").read_text()


def strip_cpu(obj):
    """a raw document as written before cpu_busy was measured"""
    if isinstance(obj, dict):
        return {k: strip_cpu(v) for k, v in obj.items() if "cpu_busy" not in k}
    if isinstance(obj, list):
        return [strip_cpu(v) for v in obj]
    return obj


# ------------------------------------------------------------------ helper

def test_cpu_note():
    assert stats.cpu_note([("a", 0.5), ("b", 0.2)]) == \
        "The virtual CPU stayed at or below 50% busy in every cell."
    assert stats.cpu_note([("a", 0.51), ("b", 0.2), ("c", None), ("d", 0.9)]) == \
        "Virtual CPU above 50% busy in: a (51%), d (90%); there the guest's CPU may set the result."
    assert "1 without a measurement" in stats.cpu_note([("a", 0.1), ("b", None)])
    assert "not measured" in stats.cpu_note([("a", None)])
    assert stats.busy_pct(None) == "-" and stats.busy_pct(0.456) == "46%"


def test_sample_at_waits_for_the_start():
    from dcnet.testbed.netlab import monotonic_us
    start = monotonic_us() + 50_000
    total, idle = stats.sample_at(start)
    assert monotonic_us() >= start and total >= idle > 0


# ------------------------------------------------------------------- d2tcp

def d2tcp_raw():
    def fig6_run(cc, rep, busy):
        return dict(cc=cc, rep=rep, start_us=0, samples=[], cpu_busy=busy,
                    flows=[dict(id=f"flow{i}", met=i < 3, fct_us=1_000_000 * (i + 1)) for i in range(4)],
                    qdisc=[dict(kind="red", marked=5)])

    def fig7_run(cc, fanin, busy):
        return dict(cc=cc, fanin=fanin, interval_us=1000, cpu_busy=busy, queries=[],
                    flows=[dict(met=True, fct_us=2000), dict(met=False, fct_us=9000)],
                    background=[dict(bytes=1_000_000, fct_us=800_000)], qdisc=[])
    return dict(kernel="6.12.117-dcnet", rate_mbit=30, sustained_mbit=150.0, k_bytes=30000,
                queue_bytes=1_000_000, fig6_scale=0.011, fig7_scale=0.015, fig7_time_scale=5,
                calibration_cpu_busy=0.97,
                fig6=dict(sizes=[1, 2, 3, 4], deadlines_ms=[1000, 1500, 2500, 4000],
                          runs=[fig6_run("dctcp", 0, COOL), fig6_run("d2tcp", 0, HOT),
                                fig6_run("dctcp", 1, COOL), fig6_run("d2tcp", 1, COOL)]),
                fig7=dict(resp_bytes=[1500, 7500], deadline_us=[25000, 125000], bg_bytes=150000,
                          bg_every_us=400000,
                          runs=[fig7_run("dctcp", 20, HOT), fig7_run("d2tcp", 20, COOL)]))


def test_d2tcp(tmp_path):
    res = d2tcp.analyse(d2tcp_raw())
    json.dumps(res)
    assert res["calibration_cpu_busy"] == 0.97
    assert res["fig6"]["schemes"]["d2tcp"]["cpu_busy"] == [HOT, COOL]
    assert res["fig6"]["schemes"]["dctcp"]["cpu_busy"] == [COOL, COOL]
    assert {(r["cc"], r["cpu_busy"]) for r in res["fig7"]["rows"]} == {("dctcp", HOT), ("d2tcp", COOL)}
    text = report_text(d2tcp, res, tmp_path)
    assert flagged(text) == ["Fig. 6 d2tcp rep 0", "Fig. 7 fan-in 20 dctcp"]
    assert "| 83%, 31% |" in text and "| 31%, 31% |" in text        # Fig. 6, per rep
    assert re.search(r"\| 20 \| dctcp \|.*\| 83% \|", text)
    assert "virtual CPU 97% busy" in text                            # the calibration, not flagged


def test_d2tcp_without_cpu(tmp_path):
    res = d2tcp.analyse(strip_cpu(d2tcp_raw()))
    assert res["calibration_cpu_busy"] is None
    assert res["fig6"]["schemes"]["d2tcp"]["cpu_busy"] == [None, None]
    assert all(r["cpu_busy"] is None for r in res["fig7"]["rows"])
    text = report_text(d2tcp, res, tmp_path)
    assert "was not measured in this run" in text and "| -, - |" in text


def test_d2tcp_all_below(tmp_path):
    raw = d2tcp_raw()
    for run in raw["fig6"]["runs"] + raw["fig7"]["runs"]:
        run["cpu_busy"] = COOL
    assert flagged(report_text(d2tcp, d2tcp.analyse(raw), tmp_path)) is None


# ---------------------------------------------------------------- fastlane

def fastlane_cpu_raw():
    raw = fastlane_raw()
    for c in raw["pa"] + raw["incast"]:
        c["cpu_busy"] = COOL
    next(c for c in raw["pa"] if c["scheme"] == "dctcp")["cpu_busy"] = HOT
    next(c for c in raw["incast"] if c["scheme"] == "tcp-rto10")["cpu_busy"] = HOT
    raw["calibration_cpu_busy"] = 0.99
    return raw


def test_fastlane(tmp_path):
    res = fastlane.analyse(fastlane_cpu_raw())
    json.dumps(res)
    assert {r["scheme"]: r["cpu_busy"] for r in res["pa"]} == \
        dict({s: COOL for s in fastlane.SCHEMES}, dctcp=HOT)
    assert {r["scheme"]: r["cpu_busy"] for r in res["incast"]} == \
        dict({s: COOL for s in fastlane.SCHEMES}, **{"tcp-rto10": HOT})
    assert res["calibration_cpu_busy"] == 0.99
    text = report_text(fastlane, res, tmp_path)
    assert flagged(text) == ["partition-aggregate dctcp load 40%", "incast tcp-rto10 N=8"]
    assert re.search(r"\| 40% \| dctcp \|.*\| 83% \|", text)
    assert re.search(r"\| 8 \| tcp-rto10 \|.*\| 83% \|", text)
    assert "virtual CPU 99% busy" in text


def test_fastlane_without_cpu(tmp_path):
    res = fastlane.analyse(fastlane_raw())
    assert all(r["cpu_busy"] is None for r in res["pa"] + res["incast"])
    assert res["calibration_cpu_busy"] is None
    assert "was not measured in this run" in report_text(fastlane, res, tmp_path)


# --------------------------------------------------------------------- htb

def htb_raw():
    def cell(scheme, flows, busy, **kw):
        # 2 s of 100 ms intervals, 9 Mbit/s in all from one sender (Table 1) or two (Table 2)
        senders = 2 if "min_kbit" in kw else 1
        return dict(scheme=scheme, flows=flows, tput=[[9e6 / senders] * 20] * senders,
                    rtt=dict(p50_us=800.0, p999_us=4000.0, cdf_us=None), counters={"drops": 0},
                    cpu_busy=busy, **kw)
    return dict(kernel="6.12.117-dcnet", rate_mbit=10, sustained_mbit=100.0, k_bytes=6000, duration_s=6,
                calibration_cpu_busy=0.95,
                table1=dict(unloaded=dict(p50_us=300.0, p99_us=None, p999_us=900.0, avg_us=None, cdf_us=None,
                                          cpu_busy=COOL),
                            cells=[cell("plain", 1, COOL, rate_kbit=10000),
                                   cell("ece", 16, HOT, rate_kbit=10000)]),
                table2=dict(cells=[cell("rwnd", 8, HOT, min_kbit=5000, total_kbit=10000),
                                   cell("ce", 1, COOL, min_kbit=2000, total_kbit=10000)]))


def test_htb(tmp_path):
    res = htb.analyse(htb_raw())
    json.dumps(res)
    assert [(r["scheme"], r["cpu_busy"]) for r in res["table1"]] == [("plain", COOL), ("ece", HOT)]
    assert [(r["scheme"], r["cpu_busy"]) for r in res["table2"]] == [("rwnd", HOT), ("ce", COOL)]
    assert res["unloaded_rtt"]["cpu_busy"] == COOL and res["calibration_cpu_busy"] == 0.95
    assert res["table1"][0]["saturation"] == pytest.approx(0.9)
    assert res["table2"][0]["saturation"] == pytest.approx(0.9)
    text = report_text(htb, res, tmp_path)
    assert flagged(text) == ["Table 1 ece 16 flows", "Table 2 rwnd X/T 0.5 8 flows per VM"]
    assert re.search(r"\| ece \| 16 \|.*\| 83% \|", text) and re.search(r"\| rwnd \| 0\.5 \| 8 \|.*\| 83% \|", text)
    assert "virtual CPU 31% busy" in text and "virtual CPU 95% busy" in text


def test_htb_without_cpu(tmp_path):
    raw = strip_cpu(htb_raw())
    del raw["table2"]
    res = htb.analyse(raw)
    assert all(r["cpu_busy"] is None for r in res["table1"])
    assert res["unloaded_rtt"]["cpu_busy"] is None and res["calibration_cpu_busy"] is None
    assert "was not measured in this run" in report_text(htb, res, tmp_path)


def test_htb_hot_unloaded_rtt_is_flagged(tmp_path):
    raw = htb_raw()
    raw["table1"]["unloaded"]["cpu_busy"] = HOT
    for c in raw["table1"]["cells"] + raw["table2"]["cells"]:
        c["cpu_busy"] = COOL
    assert flagged(report_text(htb, htb.analyse(raw), tmp_path)) == ["unloaded RTT"]


def test_htb_saturation_is_bytes_over_time():
    """issue 15: saturation from the bytes received over the time they
    took, not the mean of the interval rates (which a short last interval
    inflates)"""
    ivs = [[50_000, 0.1]] * 20 + [[10_000, 0.01]]      # a short last interval at 8 Mbit/s
    cell = dict(tput=[ivs, ivs], rtt=dict(p50_us=1, p999_us=2), counters={}, cpu_busy=0.2)
    st = htb.cell_stats(cell, rate_bps=10e6)
    # from MEASURE_FROM_S = 1.5 s on: 2 x (5 x 50 KB + 10 KB) over 0.51 s
    assert htb.MEASURE_FROM_S == 1.5
    assert abs(st["tput_mbit"] - 2 * (5 * 50_000 + 10_000) * 8 / 0.51 / 1e6) < 1e-9
    assert st["saturation"] < 0.82
    # the old raw format (interval rates) still reads
    old = dict(cell, tput=[[4e6] * 20, [4e6] * 20])
    assert abs(htb.cell_stats(old, rate_bps=10e6)["saturation"] - 0.8) < 1e-9


def test_htb_wire_stats():
    # 10 Mbit/s for 6 s sampled every 0.1 s, with a 2 s stall of the
    # limiter from 3 s to 3.5 s: the window is 1 s .. duration
    samples, b = [], 0
    for i in range(61):
        t = i / 10
        samples.append([t, b])
        b += 0 if 3.0 <= t < 3.5 else 125000
    w = htb.wire_stats(samples, 10e6, 1.0, 6.0)
    assert w["wire_samples"] == 51
    assert w["wire_saturation"] == pytest.approx(45 / 50)
    assert w["wire_cv"] == pytest.approx(statistics.pstdev([10e6] * 45 + [0] * 5) / 9e6)
    # steady: saturation 1, CV 0; the start-up second left out
    steady = [[i / 10, i * 125000 + (10**6 if i >= 10 else 0)] for i in range(61)]
    w = htb.wire_stats(steady, 10e6, 1.0, 6.0)
    assert w["wire_saturation"] == pytest.approx(1.0) and w["wire_cv"] == pytest.approx(0.0)
    # no samples (raw from before the sampler): no figures
    assert htb.wire_stats(None, 10e6, 1.0, 6.0)["wire_saturation"] is None


def test_htb_probe_start_is_outside_the_window():
    """the one 100 ms dip at the RTT probe's start (1.05-1.27 s in every
    cell of the 2026-11-24 wire run, plain HTB's standing queue included)
    is left out; a stall later in the run is not"""
    def wire(stall_at):
        samples, b = [], 0
        for i in range(61):
            samples.append([i / 10, b])
            b += 25000 if abs(i / 10 - stall_at) < 0.01 else 125000
        return samples
    cell = dict(tput=[[[125000, 0.1]] * 60], rtt=dict(p50_us=1000, p999_us=2000), counters={})
    early = htb.cell_stats(dict(cell, wire=wire(1.1)), 10e6, 6)
    assert early["wire_saturation"] == pytest.approx(1.0) and early["wire_cv"] == pytest.approx(0.0)
    late = htb.cell_stats(dict(cell, wire=wire(3.0)), 10e6, 6)
    assert late["wire_saturation"] < 0.99 and late["wire_cv"] > 0.05


def test_htb_rtt_at_the_papers_scale():
    """the queue beyond the unloaded RTT, in bytes, drained at the paper's
    1 Gbit/s over its 62 us unloaded path"""
    q = htb.queue_at_p50(p50_us=1036, unloaded_us=36, rate_bps=100e6)
    assert q["queue_p50_bytes"] == pytest.approx(12500)
    assert q["rtt_p50_at_paper_us"] == pytest.approx(62 + 100)
    assert q["rtt_p50_at_paper_ratio"] == pytest.approx(162 / 62)
    assert htb.queue_at_p50(None, 36, 100e6) == {} and htb.queue_at_p50(50, None, 100e6) == {}
    # a median below the unloaded one is no queue, not a negative one
    assert htb.queue_at_p50(30, 36, 100e6)["queue_p50_bytes"] == 0


def test_htb_report_shows_wire(tmp_path):
    raw = htb_raw()
    raw["table1"]["cells"][0]["wire"] = [[i / 10, i * 112500] for i in range(61)]
    res = htb.analyse(raw)
    assert res["table1"][0]["wire_saturation"] == pytest.approx(0.9)
    assert res["table1"][1]["wire_saturation"] is None
    text = report_text(htb, res, tmp_path)
    assert re.search(r"\| plain \| 1 \| 9\.0 \| 90\.0% \| 0\.0% \| 90\.0% \|", text)


def test_htb_saturation_leaves_out_the_tail():
    # 100 ms intervals for 10 s at 9 Mbit/s, then 4 s more (TAIL_S) at a
    # quarter of it: a 6 s cell's saturation is from 1 s to 6 s only
    iv = [[112500, 0.1]] * 100 + [[28125, 0.1]] * 40
    cell = dict(tput=[iv], rtt=dict(p50_us=1.0, p999_us=2.0), counters={}, cpu_busy=None)
    s = htb.cell_stats(cell, 10e6, 6)
    assert s["saturation"] == pytest.approx(0.9) and s["cv"] == pytest.approx(0.0)
    assert htb.cell_stats(cell, 10e6)["saturation"] < 0.8
