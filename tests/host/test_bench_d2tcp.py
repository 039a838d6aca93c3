"""bench/d2tcp.py's congestion-state and queue analysis of the fan-in
experiment (issue 22): synthetic samples, no guest."""
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import d2tcp  # noqa: E402


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
