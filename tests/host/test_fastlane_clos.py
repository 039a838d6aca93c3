"""bench/fastlane_clos.py: the FL-FH / FL-PS report from a testbed raw.json"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dcnet.bench import fastlane_clos


def flows(short_us, long_us):
    fl = [dict(kind="short", bytes=kb * 1024, fct_us=short_us * kb / 2) for kb in (2, 4, 8, 16, 32)]
    fl += [dict(kind="long", bytes=1 << 20, fct_us=long_us), dict(kind="long", bytes=1 << 20, fct_us=None)]
    return fl


def run(scheme, short_us, long_us, **extra):
    ports = [dict(node="l1", dev=f"s{k}", sent_bytes=1000 * k, drops=1) for k in (1, 2, 3, 4)]
    return dict(scheme=scheme, workload="partagg-40", flows=flows(short_us, long_us), ports=ports,
                host_counters={"nstat": {"hosts": {"h1": {"TcpExtTCPTimeouts": 3, **extra}}}}, cpu={"x": 0.1})


def test_report_reductions_against_tcp_codel(tmp_path):
    raw = dict(meta={"kernel": "k", "clock": "virtual"},
               runs=[run("tcp-codel", 1000, 100000), run("fl-fh", 500, 80000),
                     run("fl-ps", 200, 40000, TcpExtTCPFastLaneScatterHeld=7)])
    (tmp_path / "raw.json").write_text(json.dumps(raw))
    text = fastlane_clos.report(str(tmp_path))
    assert (tmp_path / "fastlane-scatter.md").read_text() == text
    rows = {ln.split(" | ")[0].lstrip("| "): ln for ln in text.splitlines() if ln.startswith("| fl-") or
            ln.startswith("| tcp-codel")}
    # 2 KB p99.9: 1.0 ms, 0.5 ms (-50%), 0.2 ms (-80%); 1 MB mean 100, 80 (-20%), 40 ms (-60%)
    assert rows["tcp-codel"].startswith("| tcp-codel | 1.0 n=1 |")
    assert "| 0.5 (-50%) n=1 |" in rows["fl-fh"] and "| 80.0 (-20%) | 1/2 |" in rows["fl-fh"]
    assert "| 0.2 (-80%) n=1 |" in rows["fl-ps"] and "| 40.0 (-60%) | 1/2 |" in rows["fl-ps"]
    assert "| 4.00 |" in rows["fl-ps"] and "| 7 |" in rows["fl-ps"]   # uplink spread, scatter held
    assert "| 2 KB p99.9 FCT against TCP-Codel | -81% (1.12 -> 0.21 ms, FL-PS) | -50% | -80% |" in text
    assert "| 1 MB mean FCT against TCP-Codel | -62% (FL-PS) | -20% | -60% |" in text
    assert "| 1 MB mean FCT, FL-PS against FL-FH | (the paper's -62% may be this one) | | -50% |" in text


def test_cli_without_raw_fails(tmp_path):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "fastlane_clos.py"), str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "no raw.json" in r.stderr


def test_reads_the_kept_xz(tmp_path):
    import lzma
    raw = dict(meta={}, runs=[run("tcp-codel", 1000, 100000), run("fl-ps", 200, 40000)])
    with lzma.open(tmp_path / "raw.json.xz", "wt") as f:
        json.dump(raw, f)
    assert "| 2 KB p99.9 FCT against TCP-Codel | -81% (1.12 -> 0.21 ms, FL-PS) | - | -80% |" in \
        fastlane_clos.report(str(tmp_path))


def exp_meta(**exp):
    return {"kernel": "k", "clock": "virtual", "experiment": exp}


def test_fig5_summary_against_tcp_codel_and_the_healthy_cells(tmp_path):
    """a degrade fault makes the run Fig. 5: its summary gives each scheme
    against TCP-Codel, the degraded link's ports, and each cell against the
    same cell of the Fig. 4 run given with it"""
    fig4, fig5 = tmp_path / "clos", tmp_path / "clos-degraded"
    fig4.mkdir()
    fig5.mkdir()
    wl = [{"name": "partagg", "label": "partagg-40", "load": 0.125}]
    (fig4 / "raw.json").write_text(json.dumps(dict(meta=exp_meta(workloads=wl), runs=[
        run("tcp-codel", 1000, 100000), run("fl-ps", 200, 40000)])))
    fault = {"at_s": 0, "node": "l1", "port": "s1", "action": "degrade", "mbit": 1}
    deg = [dict(run(s, us, lus), faults=[dict(fault, applied=True)]) for s, us, lus in
           (("tcp-codel", 2000, 200000), ("fl-fh", 1000, 150000), ("fl-ps", 400, 120000))]
    (fig5 / "raw.json").write_text(json.dumps(dict(meta=exp_meta(workloads=wl, faults=[fault]), runs=deg)))
    text = fastlane_clos.report(str(fig4), str(fig5))
    assert (fig4 / "fastlane-scatter.md").read_text() == text
    assert "Fig. 4 (utilization) from `raw.json`" in text and "Fig. 5 (a degraded link) from `../clos-degraded/raw.json`" in text
    assert "Degraded: l1-s1 to 1 Mbit/s at 0 s" in text
    rows = {ln.split(" | ")[1]: ln for ln in text.splitlines() if ln.startswith("| 40% | ")}
    # 2 KB p99.9 2.0, 1.0 (-50%), 0.4 ms (-80%); healthy fl-ps 0.2 -> 0.4 (+100%), 40 -> 120 ms (+200%)
    assert "| 0.4 (-80%) |" in rows["fl-ps"] and "| 120.0 (-40%) |" in rows["fl-ps"]
    assert rows["fl-ps"].endswith("| 0.2 -> 0.4 (+100%) | 40.0 -> 120.0 (+200%) |")
    assert "| - | - |" in rows["fl-fh"]                       # no healthy fl-fh cell
    assert "l1:s1 1 KB 1 0" in rows["fl-ps"]                  # the degraded port: sent KB, drops, marks
    assert "| 40% | up to -82% (no CP here) | -80% | -60% | -40% | -20% |" in text
    # Fig. 4's own paper table is there once (for the Fig. 4 run only)
    assert text.count("Against the paper (Fig. 4, Sec. 4.2.1)") == 1


def test_fig6_summary_per_short_share(tmp_path):
    wls = [{"name": "partagg", "label": f"s{p}", "load": 0.1875, "short_share": p / 100} for p in (10, 50)]
    runs = []
    for w in wls:
        for s, us, lus in (("tcp-codel", 1000, 100000), ("fl-fh", 800, 100000), ("fl-ps", 250, 50000)):
            runs.append(dict(run(s, us, lus), workload=w["label"]))
    (tmp_path / "raw.json").write_text(json.dumps(dict(meta=exp_meta(workloads=wls), runs=runs)))
    text = fastlane_clos.report(str(tmp_path))
    assert "## Fig. 6: the share of short flows in the load" in text
    assert "| 50% | 60% | fl-ps | 0.2 (-75%) |" in text
    assert "| 50% | over -70% / over -70% | -75% | -75% | -75% | -20% | -50% | +0% |" in text
    assert "| 10% | (-81% at 2 KB with 10% short, Fig. 4) |" in text
    assert "Against the paper (Fig. 4" not in text
