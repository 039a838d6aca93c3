"""bench/d2tcp.py's congestion-state and queue analysis of the fan-in
experiment (issue 22): synthetic samples, no guest."""
import json
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dcnet.bench import d2tcp


def sample(resp, t, alpha, d, cwnd, unacked, deadline_us=30000, srtt=2000, sent=1):
    return dict(type="rsample", resp=resp, bytes=30000, deadline_us=deadline_us, t_us=t, cwnd=cwnd,
                srtt_us=srtt, unacked=unacked, notsent=0, sent=sent, alpha=alpha, d=d, flags=1,
                time_left_us=0, bytes_left=0, retrans=0)


def test_p_of():
    assert d2tcp.p_of(512, 1024) == 0.5
    assert d2tcp.p_of(512, 2048) == 0.25
    assert d2tcp.p_of(512, -1) == 0.5             # DCTCP: p = alpha
    assert d2tcp.p_of(-1, 1024) is None
    assert d2tcp.p_of(1024, 512) == 1.0


def test_response_state_means_over_samples_in_flight():
    ss = [sample(0, 0, 1024, 2048, 10, 0, sent=0),      # before the first byte: only the start
          sample(0, 100, 512, 2048, 10, 10),
          sample(0, 200, 256, 1024, 6, 6),
          sample(0, 300, 256, 1024, 4, 0)]              # all acknowledged
    r = d2tcp.response_state(ss, dict(met=False, fct_us=250))
    assert r["samples"] == 2 and r["alpha0"] == 1024 and r["cwnd0"] == 10
    assert r["alpha_mean"] == 384 and r["d_mean"] == 1536 and r["d_cap_frac"] == 0.5
    assert r["p_mean"] == pytest.approx((0.25 + 0.25) / 2)
    assert r["cwnd_mean"] == 8 and r["cwnd_min"] == 6 and r["met"] is False


def test_ccstate_by_leaf_and_query_and_summary():
    logs = ["\n".join(json.dumps(x) for x in [sample(0, 0, 1024, 2048, 10, 5, deadline_us=26000),
                                              sample(1, 0, 1024, 512, 10, 5, deadline_us=120000)]),
            json.dumps(sample(0, 0, 900, 2048, 3, 2, deadline_us=30000)) + "\nnot json\n"]
    flows = [dict(id="q0-l0", met=False, fct_us=40000), dict(id="q1-l0", met=True, fct_us=40000),
             dict(id="q0-l1", met=True, fct_us=20000)]
    st = d2tcp.ccstate_of(logs, flows)
    assert [(r["leaf"], r["resp"], r["met"]) for r in st] == [(0, 0, False), (0, 1, True), (1, 0, True)]
    s = d2tcp.ccstate_summary(st, (25000, 125000))
    assert s["near"]["responses"] == 2 and s["near"]["missed_fraction"] == 0.5
    assert s["far"]["responses"] == 1 and s["far"]["d"]["p50"] == 0.5
    assert s["near"]["d_at_cap_fraction"] == 1.0 and s["all"]["responses"] == 3
    assert "mid" not in s


def test_queue_summary_counts_only_the_bursts():
    q = dict(fields=["t_us", "backlog", "qlen", "packets", "marked", "drops"], period_ms=2,
             samples=[[0, 0, 0, 0, 0, 0], [10, 60000, 40, 100, 50, 0], [20, 45000, 30, 200, 140, 0],
                      [30, 0, 0, 300, 140, 0], [40, 0, 0, 400, 140, 0]])
    queries = [dict(query=0, start_us=5)]
    flows = [dict(query=0, end_us=25)]
    r = d2tcp.queue_summary(q, queries, flows, 30000)
    assert r["burst_samples"] == 2 and r["above_k_fraction_in_bursts"] == 1.0
    assert r["marked_per_packet_in_bursts"] == 0.9 and r["backlog_kb_max"] == 60


def test_fig6_d_is_the_modules_formula():
    # Tc = B / (3/4 W) round trips; d = Tc * srtt / D, within [1/2, 2]
    assert d2tcp.fig6_d(3 * 10 * 1448, 10, 1000, 4000) == pytest.approx(1.0)
    assert d2tcp.fig6_d(3 * 10 * 1448, 10, 1000, 40000) == 0.5          # far: the floor
    assert d2tcp.fig6_d(3 * 10 * 1448, 10, 1000, 400) == 2.0            # near: the cap
    assert d2tcp.fig6_d(1000, 10, 1000, -5) == 2.0                      # past the deadline
    assert d2tcp.fig6_d(0, 10, 1000, 4000) == 1.0                       # nothing left


def test_fig6_time_rig_keeps_the_papers_pipe():
    d2tcp.RATE_MBIT = 200
    p = d2tcp.fig6_params("time")
    assert p["time_scale"] == pytest.approx(13.5)
    assert p["base_rtt_us"] == 1350 and p["k_bytes"] == 65 * 1500 and p["queue_bytes"] == 4_000_000
    old = d2tcp.fig6_params("bytes")
    assert old["base_rtt_us"] == 0 and old["k_bytes"] == d2tcp.K_BYTES


def test_fig6_ccstate_only_while_all_four_run():
    flows = [dict(id=f"flow{i}", fct_us=(i + 1) * 1_000_000, bytes=10**7, met=False) for i in range(4)]
    samples = [dict(type="sample", id=f"flow{i}", t_us=t, bytes_acked=0, cwnd=10 + i, srtt_us=5000,
                    alpha=512) for i in range(4) for t in (500_000, 900_000, 1_500_000)]
    st = d2tcp.fig6_ccstate([dict(cc="d2tcp", flows=flows, samples=samples)], [10**7] * 4,
                            [1000, 1500, 2500, 4000])
    # samples after the first completion (1 s) are left out
    assert st["d2tcp"]["flow3"]["cwnd"] == 13 and st["d2tcp"]["flow0"]["alpha"] == 0.5
    assert st["d2tcp"]["flow0"]["d"] == 2.0
