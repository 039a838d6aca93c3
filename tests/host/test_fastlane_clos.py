"""bench/fastlane_clos.py: the FL-FH / FL-PS report from a testbed raw.json"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import fastlane_clos  # noqa: E402


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
