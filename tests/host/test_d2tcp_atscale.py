"""D2TCP's at-scale benchmark on the testbed (Sec. 4.2): the `oldi` workload,
its experiment keys, the deadline accounting of the runner and the report's
section.  Host only: no boot."""
import json
import os
import statistics

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dcnet.testbed import report
from dcnet.testbed import run
from dcnet.testbed import workloads
from dcnet.testbed.experiment import ExperimentError, validate_experiment

HOSTS = [f"h{i}" for i in range(1, 17)]
EXP = os.path.join(ROOT, "testbed", "experiments", "d2tcp-atscale.json")


def trees(flows):
    return [f for f in flows if f["kind"] == "tree"]


def test_oldi_is_the_papers_five_applications_scaled_in_time():
    fl = workloads.generate("oldi", HOSTS, fanin=40, link_mbit=100, hosts_per_leaf=4, duration_s=10)
    ts = trees(fl)
    assert [t["app"] for t in ts] == [0, 1, 2, 3, 4]
    # Sec. 4.2.1: 2/6/10/14/18 KB, 20/30/35/40/45 ms; TS = 1000 / 100 = 10
    assert [t["resp_bytes"] for t in ts] == [2048, 6144, 10240, 14336, 18432]
    assert [t["deadline_us"] for t in ts] == [200000, 300000, 350000, 400000, 450000]
    # medium variance: a uniform 0-50% added
    assert [t["deadline_max_us"] for t in ts] == [300000, 450000, 525000, 600000, 675000]
    for t in ts:
        assert len(t["leaves"]) == 40 and t["src"] not in t["leaves"]
        # 40 leaves over the 15 other hosts: each serves 2 or 3
        counts = [t["leaves"].count(h) for h in HOSTS if h != t["src"]]
        assert min(counts) == 2 and max(counts) == 3
        # the responses take `load` (0.15) of the parent's 100 Mbit/s link
        assert t["fanin" if "fanin" in t else "resp_bytes"]
        assert 40 * t["resp_bytes"] * 8 / t["interval_us"] == pytest.approx(0.15 * 100, rel=1e-3)
        assert t["queries"] == int(10e6 // t["interval_us"])
    # parents on different leaves of the 4x4 Clos (the fifth on the first's leaf)
    racks = [int(t["src"][1:]) // 4.0001 for t in ts]
    assert len(set(racks[:4])) == 4
    assert len({t["src"] for t in ts}) == 5


def test_oldi_trees_share_the_applications_parent_and_load():
    fl = workloads.generate("oldi", HOSTS, fanin=10, trees=5, load=0.5, link_mbit=25, hosts_per_leaf=4,
                            duration_s=20)
    ts = trees(fl)
    assert len(ts) == 25
    for a in range(5):
        mine = sorted((t for t in ts if t["app"] == a), key=lambda t: t["tree"])
        assert [t["tree"] for t in mine] == [0, 1, 2, 3, 4]
        assert len({t["src"] for t in mine}) == 1
        iv = mine[0]["interval_us"]
        # five trees, each at a fifth of the load: together 0.5 of 25 Mbit/s
        assert 5 * 10 * mine[0]["resp_bytes"] * 8 / iv == pytest.approx(0.5 * 25, rel=1e-3)
        # staggered evenly over the interval, queries within the duration
        assert [t["start_s"] for t in mine] == pytest.approx([j * iv / 5 / 1e6 for j in range(5)], abs=1e-6)
        for t in mine:
            assert t["start_s"] * 1e6 + t["queries"] * iv <= 20e6 + 1
        # leaves drawn per tree
        assert len({tuple(t["leaves"]) for t in mine}) == 5
        assert len({t["seed"] for t in mine}) == 5
    assert len({t["src"] for t in ts}) == 5


def test_oldi_variance_apps_time_scale_and_seed():
    a = workloads.generate("oldi", HOSTS, fanin=5, apps=2, variance=0.1, link_mbit=10, seed=3, duration_s=60)
    ts = trees(a)
    assert len(ts) == 2
    assert ts[0]["deadline_us"] == 2000000 and ts[0]["deadline_max_us"] == 2200000    # TS = 100
    assert a == workloads.generate("oldi", HOSTS, fanin=5, apps=2, variance=0.1, link_mbit=10, seed=3,
                                   duration_s=60)
    assert a != workloads.generate("oldi", HOSTS, fanin=5, apps=2, variance=0.1, link_mbit=10, seed=4,
                                   duration_s=60)
    assert workloads.oldi_time_scale(100) == 10 and workloads.oldi_time_scale(250, 1000) == 4
    for bad in (dict(apps=0), dict(apps=6), dict(fanin=0), dict(trees=0), dict(load=0), dict(variance=-0.1), dict(link_mbit=0)):
        with pytest.raises(ValueError):
            workloads.generate("oldi", HOSTS, **bad)


def test_oldi_background_flows_are_the_papers_1mb_every_300ms_scaled():
    fl = workloads.generate("oldi", HOSTS, fanin=10, link_mbit=100, duration_s=3000, seed=2)
    ts = {t["app"]: t["src"] for t in trees(fl)}
    bg = [f for f in fl if f["kind"] == "long"]
    assert all(f["bytes"] == 1 << 20 and f["dst"] == ts[f["app"]] and f["src"] != f["dst"] for f in bg)
    for a in ts:
        st = sorted(f["start_s"] for f in bg if f["app"] == a)
        gaps = [y - x for x, y in zip(st, st[1:])]
        assert statistics.mean(gaps) == pytest.approx(0.3 * 10, rel=0.15)      # 300 ms x TS
    assert not [f for f in workloads.generate("oldi", HOSTS, background=False) if f["kind"] == "long"]


def test_the_shipped_experiment_and_the_oldi_keys():
    exp = validate_experiment(EXP)
    assert {s["name"] for s in exp["schemes"]} == {"tcp", "dctcp", "d2tcp"}
    assert sorted(w["fanin"] for w in exp["workloads"]) == [10, 20, 40]
    topo = exp["topology"]
    ts = topo["paper_link_mbit"] / topo["link_mbit"]
    # K = 20 packets (the paper's at 1 Gbit/s) on the marking schemes, none on TCP's drop-tail
    for s in exp["schemes"]:
        assert (s.get("topology") or {}).get("ecn_k_bytes", 0) == (0 if s["name"] == "tcp" else 30000)
    # RTOmin 20 ms and the 200 us base RTT, x TS
    assert exp["sysctls"]["net.ipv4.tcp_rto_min_us"] == 20000 * ts
    assert topo["host_delay_us"] * 2 == 200 * ts
    for bad, msg in [({"sede": 1}, "unknown key 'sede'"), ({"fanin": 0}, "fanin"), ({"apps": 6}, "apps"),
                     ({"load": 0}, "load"), ({"variance": "high"}, "variance")]:
        e = json.loads(open(EXP).read())
        e["workloads"][0].update(bad)
        with pytest.raises(ExperimentError) as ei:
            validate_experiment(e, name="x.json")
        assert msg in str(ei.value)


class _Fab:
    def ip(self, h):
        return "10.0.0." + h[1:]


def test_fanin_command_line():
    t = trees(workloads.generate("oldi", HOSTS, fanin=5, link_mbit=100))[0]
    a = run.fanin_argv(_Fab(), t)
    assert a[1] == "fanin"
    assert a[a.index("--deadline-us") + 1] == f"{t['deadline_us']}-{t['deadline_max_us']}"
    assert a[a.index("--leaves") + 1].split(",") == [f"10.0.0.{h[1:]}:{run.SIZED_PORT}" for h in t["leaves"]]
    assert a[a.index("--queries") + 1] == str(t["queries"])
    assert a[0] == run.DLTRAFFIC
    # a staggered tree sleeps to its start first
    t2 = [t for t in trees(workloads.generate("oldi", HOSTS, fanin=5, trees=2, link_mbit=100)) if t["tree"] == 1][0]
    a = run.fanin_argv(_Fab(), t2)
    assert t2["start_s"] > 0 and a[:3] == ["sh", "-c", f'sleep {t2["start_s"]} && exec "$@"']
    assert a[4:6] == [run.DLTRAFFIC, "fanin"]


def rr(q, leaf, fct, deadline, nbytes=2048):
    return json.dumps(dict(type="flow", op="rr", query=q, id=f"q{q}-l{leaf}", peer="x", bytes=nbytes,
                           start_us=0, end_us=fct, fct_us=fct, deadline_us=deadline, met=fct <= deadline))


def test_deadline_accounting():
    tree = dict(id=7, app=1, src="h1", leaves=["h2", "h3"], resp_bytes=2048, deadline_us=1000,
                deadline_max_us=1500, queries=2)
    out = "\n".join(["garbage", rr(0, 0, 1000, 1000), rr(0, 1, 1001, 1000), rr(1, 0, 50, 1400),
                     json.dumps(dict(type="query", query=0, leaves=2, missed=1, fct_us=1001, start_us=0))]) + "\n"
    recs = run.oldi_records(tree, out, 100)
    assert [r["id"] for r in recs] == [100, 101, 102, 103]
    assert [(r["query"], r["src"], r["dst"]) for r in recs] == [(0, "h2", "h1"), (0, "h3", "h1"),
                                                                (1, "h2", "h1"), (1, "h3", "h1")]
    # an FCT equal to the deadline meets it, one microsecond later misses
    assert [r["met_deadline"] for r in recs] == [True, False, True, None]
    assert recs[2]["deadline_us"] == 1400
    # the response the output lacks: no FCT, not met, its deadline known
    assert recs[3]["fct_us"] is None and recs[3]["tput_bps"] is None and recs[3]["deadline_us"] == 1000
    assert all(r["kind"] == "oldi" and r["app"] == 1 for r in recs)


def raw_for(missed_by_scheme, bg_bps):
    """three schemes on one fan-in: 2 apps x 2 queries x 5 leaves, the
    first `missed` responses late"""
    runs = []
    for scheme, missed in missed_by_scheme.items():
        flows, i = [], 0
        ts = []
        for app in (0, 1):
            t = dict(id=90 + app, app=app, src=f"h{app + 1}", leaves=[f"h{k}" for k in range(3, 8)],
                     resp_bytes=2048 * (1 + 2 * app), deadline_us=1000, deadline_max_us=1500, interval_us=10,
                     queries=2)
            ts.append(t)
            lines = [rr(q, k, 2000 if (i := i + 1) <= missed else 500, 1000, t["resp_bytes"])
                     for q in range(2) for k in range(5)]
            flows += run.oldi_records(t, "\n".join(lines), len(flows))
        bg = run.flow_record(dict(id=len(flows), src="h9", dst="h1", kind="long"), 0)
        bg.update(bytes=1 << 20, fct_us=1e6, duration_s=1.0, tput_bps=bg_bps[scheme])
        flows.append(bg)
        runs.append(dict(scheme=scheme, workload="fanin-5", duration_s=10.0, flows=flows, ports=[], rtt_us=None,
                         cpu={"guest": 0.25}, oldi_trees=ts))
    return dict(meta=dict(platform="emulated", kernel="k", hosts=HOSTS, link_mbit=100, paper_link_mbit=1000,
                          scale=0.1, started="now", experiment={}), runs=runs)


def test_report_section(tmp_path):
    raw = raw_for({"tcp": 10, "dctcp": 8, "d2tcp": 2}, {"tcp": 80e6, "dctcp": 70e6, "d2tcp": 76e6})
    res = report.build(raw, str(tmp_path), plot=False)
    o = {r["scheme"]: r["oldi"] for r in res["runs"]}
    assert o["d2tcp"]["responses"] == 20 and o["d2tcp"]["completed"] == 20
    assert o["dctcp"]["missed"] == 8 and o["dctcp"]["missed_frac"] == pytest.approx(0.4)
    assert o["d2tcp"]["missed_of_dctcp"] == pytest.approx(0.25)
    # the late ones are the first app's
    assert [a["missed"] for a in o["dctcp"]["apps"]] == [8, 0]
    assert o["tcp"]["apps"][0]["bytes"] == 2048 and o["tcp"]["apps"][1]["bytes"] == 6144
    assert o["d2tcp"]["background_of_tcp"] == pytest.approx(0.95)
    assert o["d2tcp"]["fanin"] == 5
    # FCT / deadline: 500 / 1000 for the on-time ones
    assert o["d2tcp"]["norm_p50"] == pytest.approx(0.5)
    md = (tmp_path / "report.md").read_text()
    assert "## D2TCP at scale" in md and "times x 10" in md
    assert "| d2tcp | 5 | 20 | 2 (10.0%) | 0.25 | 20.0% / 0.0% |" in md
    assert "95.0%" in md


def test_oldi_sample_ms_is_an_option_of_the_trees():
    base = workloads.generate("oldi", HOSTS, fanin=5, link_mbit=25)
    assert all("sample_ms" not in t for t in trees(base))         # off by default: trees unchanged
    on = workloads.generate("oldi", HOSTS, fanin=5, link_mbit=25, sample_ms=20)
    assert [t["sample_ms"] for t in trees(on)] == [20] * 5
    # nothing else moves: the same trees, leaves and background flows
    assert [{k: v for k, v in f.items() if k != "sample_ms"} for f in on] == base
    with pytest.raises(ValueError):
        workloads.generate("oldi", HOSTS, sample_ms=-1)
    exp = validate_experiment(EXP)
    assert [w["sample_ms"] for w in exp["workloads"]] == [20, 20, 20]
    e = json.loads(open(EXP).read())
    e["workloads"][0]["sample_ms"] = -1
    with pytest.raises(ExperimentError) as ei:
        validate_experiment(e, name="x.json")
    assert "sample_ms" in str(ei.value)
    # no other shipped experiment samples
    d = os.path.join(ROOT, "testbed", "experiments")
    for name in os.listdir(d):
        if name.endswith(".json") and not name.startswith("d2tcp-atscale"):
            assert "sample_ms" not in open(os.path.join(d, name)).read(), name


def rsample(resp, nbytes, deadline, t, d, alpha=512, flags=1, bytes_left=None, time_left=None, cwnd=10,
            srtt=8000, sent=0):
    return json.dumps(dict(type="rsample", resp=resp, bytes=nbytes, deadline_us=deadline, t_us=t, cwnd=cwnd,
                           srtt_us=srtt, unacked=0, notsent=0, sent=sent, alpha=alpha, d=d, flags=flags,
                           time_left_us=deadline - t if time_left is None else time_left,
                           bytes_left=nbytes if bytes_left is None else bytes_left, retrans=0))


def test_rsample_rows():
    out = "\n".join(["junk", rsample(3, 2048, 1000, 20, 512), '{"type": "rsample", "resp": 1}',
                     json.dumps(dict(type="flow")), rsample(4, 6144, 900, 0, -1, alpha=-1, flags=-1)[:-5]]) + "\n"
    rows = run.rsample_rows("h7", out)
    assert len(rows) == 1          # the incomplete, other-type and cut-short lines skipped
    row = dict(zip(run.RSAMPLE_FIELDS, rows[0]))
    assert row == dict(host="h7", resp=3, bytes=2048, deadline_us=1000, t_us=20, cwnd=10, srtt_us=8000, unacked=0,
                       sent=0, alpha=512, d=512, flags=1, time_left_us=980, bytes_left=2048, retrans=0)


def sampled_run():
    """one D2TCP run: a tree at h1 with leaves h3, h4; query 0 both met,
    query 1 h3's missed; samples from both leaves' servers"""
    tree = dict(id=7, app=0, src="h1", leaves=["h3", "h4"], resp_bytes=2048, deadline_us=1000,
                deadline_max_us=1500, queries=2)
    out = "\n".join([rr(0, 0, 500, 1000), rr(0, 1, 600, 1100), rr(1, 0, 1300, 1200), rr(1, 1, 400, 1400)])
    flows = run.oldi_records(tree, out, 0)
    h3 = "\n".join([
        rsample(0, 2048, 1000, 0, 512, alpha=1024),                       # q0: d 1/2 twice, then acked
        rsample(0, 2048, 1000, 20, 512, alpha=256),
        rsample(0, 2048, 1000, 40, 1024, alpha=256, bytes_left=0, sent=1),   # all acked: d = 1, not counted
        rsample(1, 2048, 1200, 0, 1024, alpha=0),                         # q1 (missed): 1, then 2, expired
        rsample(1, 2048, 1200, 20, 2048, alpha=0, flags=3, time_left=0),
    ])
    h4 = "\n".join([
        rsample(0, 2048, 1100, 0, 512, alpha=512),
        rsample(1, 2048, 1400, 0, 768, alpha=512),
        rsample(9, 2048, 777, 0, 600, alpha=512),                         # no response of the run: unmatched
    ])
    rows = run.rsample_rows("h3", h3) + run.rsample_rows("h4", h4)
    return dict(scheme="d2tcp", workload="fanin-2", duration_s=10.0, flows=flows, ports=[], rtt_us=None,
                cpu={"guest": 0.2}, oldi_trees=[tree],
                rsamples=dict(sample_ms=20, fields=list(run.RSAMPLE_FIELDS), rows=rows))


def test_oldi_samples_aggregation():
    q = report.oldi_samples(sampled_run())
    assert q["sample_ms"] == 20 and q["samples"] == 8
    assert q["responses"] == 5 and q["matched"] == 4 and q["with_deadline"] == 5
    assert q["expired_samples"] == 1
    # d while bytes are left: 512 512 1024 2048 (h3), 512 768 600 (h4); the acked sample left out
    d = q["d"]
    assert d["n"] == 7
    assert d["lt1"] == pytest.approx(5 / 7) and d["eq1"] == pytest.approx(1 / 7) and d["gt1"] == pytest.approx(1 / 7)
    assert d["p50"] == pytest.approx(600 / 1024)
    # met: h3 q0 (512, 512), h4 q0 (512), h4 q1 (768); missed: h3 q1 (1024, 2048)
    assert q["d_met"]["n"] == 4 and q["d_met"]["lt1"] == 1.0
    assert q["d_missed"]["n"] == 2 and q["d_missed"]["eq1"] == 0.5 and q["d_missed"]["gt1"] == 0.5
    assert q["missed_sampled"] == 1 and q["max_d_gt1"] == 1 and q["max_d_gt1_missed"] == 1
    # alpha over every sample: 1024 256 256 0 0 512 512 512
    a = q["alpha"]
    assert a["n"] == 8 and a["zero"] == pytest.approx(2 / 8) and a["p50"] == pytest.approx(384 / 1024)
    # Tc / D: 2048 B / (3/4 x 10 x 1448 B) = 0.189 round trips of 8 ms, over the time left
    tc = q["tc_over_d"]
    assert tc["n"] == 6      # the expired sample (no time left) has no Tc / D
    rtts = 2048 * 4 / (3 * 10 * 1448)
    want = sorted(rtts * 8000 / left for left in (1000, 980, 1200, 1100, 1400, 777))
    assert tc["p10"] >= want[0] and tc["p99"] <= want[-1] and tc["p99"] == pytest.approx(want[-1], rel=0.05)
    assert rtts * 8000 / 1000 == pytest.approx(1.5086, rel=1e-3) and tc["ge_half"] == 1.0
    # srtt: every sample but the one after h3's q0 was all acknowledged (sent, nothing unacked)
    assert q["srtt_us"]["n"] == 7 and q["srtt_us"]["p50"] == 8000
    # no samples, or a scheme without TCP_CC_INFO: no d, no alpha
    assert report.oldi_samples(dict(sampled_run(), rsamples=None)) is None
    r = sampled_run()
    F = run.RSAMPLE_FIELDS
    for row in r["rsamples"]["rows"]:
        row[F.index("d")] = row[F.index("alpha")] = row[F.index("flags")] = -1
    q = report.oldi_samples(r)
    assert q["d"] is None and q["alpha"] is None and q["with_deadline"] is None and q["samples"] == 8


def test_report_shows_the_samples(tmp_path):
    raw = raw_for({"tcp": 10, "dctcp": 8, "d2tcp": 2}, {"tcp": 80e6, "dctcp": 70e6, "d2tcp": 76e6})
    raw["runs"].append(dict(sampled_run(), workload="fanin-2b"))
    res = report.build(raw, str(tmp_path), plot=False)
    assert [r["oldi_samples"] is None for r in res["runs"]] == [True, True, True, False]
    md = (tmp_path / "report.md").read_text()
    assert "### The responders' congestion state, sampled" in md and "Every 20 ms" in md
    line = [x for x in md.splitlines() if x.startswith("| d2tcp | 2 | 8 |")]
    assert len(line) == 1
    assert "| 5 (5) | " in line[0] and "| 71.4% / 14.3% / 14.3% |" in line[0]
    assert "| 100.0% / 0.0% / 0.0% | 0.0% / 50.0% / 50.0% (1) | 1 (1) |" in line[0]


def test_fanin_trees_connect_from_fixed_source_ports():
    """every OLDI tree's connections leave its parent from fixed ports:
    per parent, its trees' leaves on consecutive ports from
    FANIN_SPORT_BASE, disjoint from the sized flows' lanes and below the
    kernel's ephemeral range; the command line carries the tree's base"""
    ts = trees(workloads.generate("oldi", HOSTS, fanin=40, trees=5, link_mbit=25))
    bases = run.fanin_sport_bases(ts)
    assert sorted(bases) == sorted(t["id"] for t in ts)
    used = {}
    for t in ts:
        ports = range(bases[t["id"]], bases[t["id"]] + len(t["leaves"]))
        mine = used.setdefault(t["src"], set())
        assert not mine & set(ports)
        mine.update(ports)
        assert run.SPORT_BASE + 2 * run.SPORT_LANE <= ports[0] and ports[-1] < 32768
        a = run.fanin_argv(_Fab(), t, bases[t["id"]])
        assert a[a.index("--sport-base") + 1] == str(bases[t["id"]])
    assert "--sport-base" not in run.fanin_argv(_Fab(), ts[0])
    # more leaves than the range holds at one parent: refused
    big = [dict(t, src="h1", id=i) for i, t in enumerate(ts * 2)]
    with pytest.raises(ValueError):
        run.fanin_sport_bases(big)
