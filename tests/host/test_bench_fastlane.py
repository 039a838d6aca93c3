"""bench/fastlane.py's host side: the analysis, the plots and the report
from raw records, without a guest."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import fastlane  # noqa: E402


def raw_doc():
    pa, incast = [], []
    for s in fastlane.SCHEMES:
        slow = 1.0 if s.endswith("fastlane") else 10.0
        flows = [dict(kind="short", kb=kb, bytes=kb * 1024, fct_us=int((1000 + i) * slow))
                 for kb in fastlane.SIZES_KB for i in range(100)]
        flows += [dict(kind="long", kb=0, bytes=10 ** 6, fct_us=200_000) for _ in range(5)]
        port = dict(kind="fastlane" if s.endswith("fastlane") else "bfifo", bytes=10 ** 6, packets=1000,
                    drops=7, nf_generated=7 if s.endswith("fastlane") else 0, nf_sent=3, nf_bytes=5000,
                    nf_cap_drops=0, nf_backlog_max=200, nf_sent_idle=0, ce_marked=0, marked=0)
        pa.append(dict(scheme=s, load=0.4, flows=flows, elapsed_s=10.0, ports={"agg": port, "w0": port},
                       netstat={"TCPTimeouts": 3}))
        incast.append(dict(scheme=s, n=8, flows=[1000, 2000], queries=[3000, 4000], ports={"agg": port},
                           netstat={"TCPTimeouts": 1}))
    return dict(kernel="6.12.117-dcnet", rate_mbit=40, sustained_mbit=200.0, buffer=131072, k_bytes=30000,
                duration_s=10, pa=pa, incast=incast)


def test_analysis_and_report(tmp_path):
    res = fastlane.analyse(raw_doc())
    row = next(r for r in res["pa"] if r["scheme"] == "tcp-fastlane")
    assert row["short"]["n"] == 500 and row["long"]["n"] == 5
    assert row["nf_generated"] == 14
    # 5000 bytes in 10 s on a 40 Mbit/s port: 0.01%
    assert row["nf_bw_fraction_max"] == pytest.approx(5000 / 10 / 5e6)
    assert row["nf_buffer_fraction_max"] == pytest.approx(200 / 131072)
    red = {(r["scheme"], r["against"]): r for r in res["reductions"]}
    assert red[("tcp-fastlane", "tcp")]["p999_reduction"] == pytest.approx(0.9, abs=0.01)
    assert ("tcp-fastlane", "tcp-rto10") in red and ("dctcp-fastlane", "dctcp") in red
    pytest.importorskip("matplotlib")
    pngs = fastlane.plots(res, str(tmp_path))
    assert set(pngs) == {"pa-fct.png", "incast.png"}
    fastlane.report(res, pngs, str(tmp_path))
    text = (tmp_path / "report.md").read_text()
    assert "| 40% | tcp-fastlane |" in text and "| tcp-fastlane | tcp | 40% | 90% |" in text


def test_host_counters_in_results_and_report(tmp_path):
    """issue 20: the hosts' FastLane counters per scheme and load (and N),
    in results.json ('host') and in a table of report.md"""
    raw = raw_doc()
    for c in raw["pa"] + raw["incast"]:
        c["netstat"].update({k: 0 for k in fastlane.FL_COUNTERS})
        if c["scheme"] == "tcp-fastlane":
            c["netstat"].update(TCPFastLaneNotify=40, TCPFastLaneRateLimited=3, TCPFastLaneBoundLowest=17)
    res = fastlane.analyse(raw)
    row = next(r for r in res["pa"] if r["scheme"] == "tcp-fastlane")
    assert row["host"]["Notify"] == 40 and row["host"]["RateLimited"] == 3
    assert set(row["host"]) == {k[len("TCPFastLane"):] for k in fastlane.FL_COUNTERS}
    inc = next(r for r in res["incast"] if r["scheme"] == "tcp-fastlane")
    assert inc["host"]["BoundLowest"] == 17
    fastlane.report(res, [], str(tmp_path))
    text = (tmp_path / "report.md").read_text()
    # Notify ... BoundLowest in FL_COUNTERS' order, then the RTOs
    assert "| 40% | tcp-fastlane | 40 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 3 | 0 | 0 | 17 | 0 | 3 |" in text
    assert "| 8 | tcp-fastlane | 40 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 3 | 0 | 0 | 17 | 0 | 1 |" in text
    # only the FastLane schemes have a row in the counters' tables
    assert "| 40% | tcp | 0 |" not in text
