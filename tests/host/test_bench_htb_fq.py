"""bench-htb's sch_fq baseline: the configuration the fq cells generate,
the figures they add (the bulk flows' own RTT, the probe's rate, fq's
counters) and the report's goals beside HTB's.  Synthetic records, no
guest."""
import json

import pytest

from dcnet.bench import htb


def test_fq_schemes_are_table1_only():
    assert htb.SCHEMES == htb.HTB_SCHEMES + ["fq", "fq_edt"]
    assert htb.T2_SCHEMES == htb.HTB_SCHEMES
    # same congestion control and ECN as HTB's CE cells
    assert htb.CC["fq"] == htb.CC["fq_edt"] == htb.CC["ce"] == "dctcp"
    assert set(htb.SCHEME_DOC) == set(htb.SCHEMES)


def test_ce_threshold_is_k_at_r():
    assert htb.ce_threshold_us(100000, 6000) == 480          # 6000 B at 100 Mbit/s
    assert htb.ce_threshold_us(1000000, 60000) == 480        # Fig. 4's K at 1 Gbit/s
    assert htb.ce_threshold_us(10000000, 6000) == 100        # floor


@pytest.mark.parametrize("k, burst", [(6000, 4), (60000, 40), (20000, 14)])
def test_red_leaf_marks_above_k(k, burst):
    """the red cell's leaf: CE above K (max K+1, probability 1) with the
    smallest burst tc accepts (K/avpkt, rounded up), so the fastest average"""
    assert htb.red_leaf(k) == (f"red limit 1514000 min {k} max {k + 1} avpkt 1500 burst {burst}"
                               " probability 1.0 ecn")
    assert htb.CC["red"] == htb.CC["ce"] == "dctcp"
    assert "red" in htb.HTB_SCHEMES


@pytest.mark.parametrize("flows, per_flow", [(1, 100000), (2, 50000), (8, 12500), (16, 6250)])
def test_fq_on_the_limiters_port(flows, per_flow):
    cmds = htb.fq_commands("fq", 100000, flows, ["vm"], k_bytes=6000, TC="TC")
    assert cmds == [("sw", f"TC qdisc add dev rx root fq maxrate {per_flow}kbit ce_threshold 480us")]


def test_fq_edt_on_every_senders_eth0():
    cmds = htb.fq_commands("fq_edt", 100000, 8, ["vm1", "vm2"], k_bytes=6000, TC="TC")
    q = "fq maxrate 12500kbit ce_threshold 480us"
    assert cmds == [("vm1", f"TC qdisc add dev eth0 root {q}"), ("vm2", f"TC qdisc add dev eth0 root {q}")]
    with pytest.raises(ValueError):
        htb.fq_commands("ce", 100000, 1, ["vm"])


class FakeLab:
    sw = "tsw"
    hosts = {"vm": ("tvm", 1), "rx": ("trx", 2)}

    def ns(self, name):
        return self.hosts[name][0]


@pytest.mark.parametrize("scheme, where", [("fq", "tsw"), ("fq_edt", "tvm")])
def test_setup_scheme_fq(monkeypatch, scheme, where):
    ran = []
    monkeypatch.setattr(htb, "sh", lambda cmd, ns=None, check=True: ran.append((ns, cmd)))
    monkeypatch.setattr(htb, "tc", lambda: "tc")
    htb.setup_scheme(FakeLab(), scheme, [("1:10", 100000, 100000, None)], 2, ["vm"])
    qd = [(ns, c) for ns, c in ran if " qdisc " in c]
    assert len(qd) == 1 and qd[0][0] == where and "fq maxrate 50000kbit ce_threshold" in qd[0][1]
    # no HTB, no htback; DCTCP with ECN on every host as in the CE cells
    assert not any("htb" in c for _, c in ran)
    sysctls = sorted(ns for ns, c in ran if "tcp_congestion_control=dctcp net.ipv4.tcp_ecn=1" in c)
    assert sysctls == ["trx", "tvm"]


def test_setup_scheme_htb_unchanged(monkeypatch):
    ran = []
    monkeypatch.setattr(htb, "sh", lambda cmd, ns=None, check=True: ran.append((ns, cmd)))
    monkeypatch.setattr(htb, "tc", lambda: "tc")
    htb.setup_scheme(FakeLab(), "ce", [("1:10", 100000, 100000, None)])
    assert ran[0] == ("tsw", "tc qdisc add dev rx root handle 1: htb default 10")
    assert ran[1] == ("tsw", f"tc class add dev rx parent 1: classid 1:10 htb rate 100000kbit ceil 100000kbit "
                             f"ecn_thresh {htb.K_BYTES} ecn_mode ce")


SOCKPERF = """sockperf: [Total Run] RunTime=4.000 sec; Warm up time=400 msec; SentMessages=40000; ReceivedMessages=39999
sockperf: ====> avg-latency=20.000 (std-dev=1.0)
sockperf: ---> percentile 99.900 =   90.000
sockperf: ---> percentile 50.000 =   15.000
"""


def test_probe_rate_from_sockperf():
    r = htb.parse_sockperf(SOCKPERF)
    assert r["p50_us"] == 30.0 and r["sent"] == 40000 and r["run_s"] == 4.0
    # 10,000 messages a second of 130-byte frames
    assert htb.probe_mbit(r) == pytest.approx(10.4)
    assert htb.probe_mbit(htb.parse_sockperf("")) is None


def iperf_json(rtts):
    """iperf3 -J of one client: per interval, each stream's sender-side sRTT"""
    return dict(intervals=[dict(streams=[dict(sender=True, rtt=v) for v in iv]) for iv in rtts])


def test_flow_rtt_and_its_median():
    assert htb.flow_rtt(iperf_json([[100, 300], [200, 200]])) == [200, 200]
    assert htb.flow_rtt(iperf_json([[]])) == [None]
    # the measured window: intervals 15 .. duration*10 - 1
    per = [1000.0] * 15 + [50.0] * 45 + [9e6] * 40
    assert htb.flow_rtt_p50(dict(flow_rtt=[per]), 6) == 50.0
    # two senders: the mean of theirs per interval
    assert htb.flow_rtt_p50(dict(flow_rtt=[[10.0] * 60, [30.0] * 60]), 6) == 20.0
    assert htb.flow_rtt_p50(dict(flow_rtt=[[]]), 6) is None
    assert htb.flow_rtt_p50(dict(), 6) is None


def test_fq_counters_sum_fq_only():
    qd = [dict(kind="htb", drops=7), dict(kind="fq", drops=3, ce_mark=5, flows_plimit=3, throttled=11),
          dict(kind="fq", drops=1, throttled=2)]
    assert htb.fq_counters(qd) == dict(fq_ce_mark=5, fq_drops=4, fq_flows_plimit=3, fq_throttled=13)
    assert htb.fq_counters([dict(kind="htb")]) == {}


def test_goals():
    ok = dict(wire_saturation=0.99, wire_cv=0.01, rtt_p50_at_paper_ratio=1.9)
    assert htb.goals(ok) == dict(rate=True, cv=True, rtt=True, flows_rtt=None)
    bad = dict(wire_saturation=0.94, wire_cv=0.06, rtt_p50_at_paper_ratio=2.1, flow_rtt_at_paper_ratio=2.1)
    assert htb.goals(bad) == dict(rate=False, cv=False, rtt=False, flows_rtt=False)
    assert htb.goals({}) == dict(rate=None, cv=None, rtt=None, flows_rtt=None)


def test_flows_rtt_at_the_papers_scale():
    # 10 ms beyond a 30 us unloaded RTT at 100 Mbit/s: 1 ms at 1 Gbit/s, over 62 us
    assert htb.flow_rtt_at_paper(10030.0, 30.0, 100e6) == pytest.approx(1062 / 62)
    assert htb.flow_rtt_at_paper(20.0, 30.0, 100e6) == 1.0
    assert htb.flow_rtt_at_paper(None, 30.0, 100e6) is None
    # the goals are the paper's, never lowered
    assert (htb.GOAL_SATURATION, htb.GOAL_CV, htb.GOAL_RTT_RATIO) == (0.95, 0.05, 2.0)


def raw_doc():
    """Table 1 with plain, ce and both fq cells at 1 and 8 flows; 10 Mbit/s"""
    def wire(rate_bps):
        return [[round(0.1 * i, 3), int(rate_bps / 8 * 0.1 * i)] for i in range(0, 61)]

    def cell(scheme, flows, wire_bps, p50, srtt):
        return dict(scheme=scheme, flows=flows, rate_kbit=10000, tput=[[[112500, 0.1]] * 60],
                    rtt=dict(p50_us=p50, p999_us=4 * p50, cdf_us=None, sent=20000, run_s=4.0),
                    wire=wire(wire_bps), flow_rtt=[[srtt] * 60],
                    counters=dict(drops=0, fq_ce_mark=0, fq_flows_plimit=12 if scheme == "fq" else 0),
                    cpu_busy=0.3)
    cells = [cell("plain", 1, 10e6, 100000.0, 100000.0), cell("ce", 1, 9.9e6, 600.0, 600.0),
             cell("fq", 1, 9.9e6, 40.0, 20000.0), cell("fq", 8, 12e6, 40.0, 90000.0),
             cell("fq_edt", 8, 9.6e6, 45.0, 700.0)]
    return dict(kernel="6.12.118-dcnet", rate_mbit=10, sustained_mbit=100.0, k_bytes=6000, duration_s=6,
                calibration_cpu_busy=0.3,
                table1=dict(unloaded=dict(p50_us=30.0, p99_us=None, p999_us=90.0, avg_us=None, cdf_us=None,
                                          cpu_busy=0.3), cells=cells))


def test_results_carry_the_new_figures():
    res = htb.analyse(raw_doc())
    json.dumps(res)
    fq8 = [r for r in res["table1"] if (r["scheme"], r["flows"]) == ("fq", 8)][0]
    assert fq8["flow_rtt_p50_us"] == 90000.0
    assert fq8["probe_mbit"] == pytest.approx(20000 * 130 * 8 / 4.0 / 1e6)
    assert fq8["wire_saturation"] == pytest.approx(1.2, rel=1e-3)
    assert fq8["goals"]["rate"] is True and fq8["goals"]["cv"] is True
    edt = [r for r in res["table1"] if r["scheme"] == "fq_edt"][0]
    assert edt["goals"]["rate"] is True                      # 96%
    assert edt["goals"]["rtt"] is True
    ce = [r for r in res["table1"] if r["scheme"] == "ce"][0]
    # 570 us of queue at 10 Mbit/s: 712 B, 67.7 us at 1 Gbit/s over 62 us
    assert ce["goals"]["rtt"] is True


def test_report_puts_fq_beside_htb(tmp_path):
    res = htb.analyse(raw_doc())
    htb.report(res, [], str(tmp_path))
    text = (tmp_path / "report.md").read_text()
    assert "## The paper's goals, HTB beside fq" in text
    sec = text.split("## The paper's goals, HTB beside fq")[1]
    rows = [ln for ln in sec.splitlines() if ln.startswith("| ") and "|---" not in ln]
    # the legend names what each cell configures
    assert any(ln.startswith("| fq | fq maxrate R/N ce_threshold T as the root qdisc of sw's port") for ln in rows)
    assert any(ln.startswith("| fq_edt | fq maxrate R/N ce_threshold T as the root qdisc of the sender's eth0")
               for ln in rows)
    goal_rows = [ln.split(" | ") for ln in rows if ln.split(" | ")[1:2] and ln.split(" | ")[1].isdigit()]
    assert [(r[0].strip("| "), r[1]) for r in goal_rows] == [
        ("plain", "1"), ("ce", "1"), ("fq", "1"), ("fq", "8"), ("fq_edt", "8")]
    fq8 = [r for r in goal_rows if r[0] == "| fq" and r[1] == "8"][0]
    assert fq8[2] == "120.0% (over R)"
    # the flows' own sRTT: 90 ms at 10 Mbit/s is 0.9 ms at 1 Gbit/s
    assert fq8[5] == "90.00 ms (15.5x)"
    assert fq8[7:11] == ["yes", "yes", "yes", "**no**"]
    plain = goal_rows[0]
    assert plain[9] == "**no**" and plain[10] == "**no**"    # 100 ms of queue
    assert "fq_flows_plimit 12" in fq8[11]
    edt = goal_rows[-1]
    assert edt[10] == "yes"
    # the fq cells are in Table 1 too, with the probe's queue at the paper's scale
    assert "| fq_edt | 8 |" in text.split("## Table 1")[1].split("##")[0]


def test_partial_table1_reads_as_raw(tmp_path, monkeypatch):
    real = htb.config.get
    monkeypatch.setattr(htb.config, "get",
                        lambda k, *a: str(tmp_path) if k == "DCNET_OUT" else (None if k == "DCNET_SEALED"
                                                                              else real(k, *a)))
    raw = raw_doc()
    htb.publish_partial(raw)
    with open(tmp_path / "raw.partial.json") as f:
        again = json.load(f)
    assert htb.analyse(again) == htb.analyse(raw)
    assert not (tmp_path / "raw.partial.json.tmp").exists()
