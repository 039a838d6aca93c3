"""dcnet.hostrun: the repeat spread pairs figures by meaning and reports the
largest relative difference; the run header says which clock ran."""
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dcnet import hostrun, stats


def test_spread_pairs_cells_by_name_not_position():
    a = {"rows": [{"scheme": "ecmp", "tput": 100.0}, {"scheme": "optimal", "tput": 200.0}]}
    b = {"rows": [{"scheme": "optimal", "tput": 202.0}, {"scheme": "ecmp", "tput": 100.5}]}
    rows = {r["figure"]: r for r in hostrun.spread([a, b])}
    assert abs(rows["rows[optimal].tput"]["spread"] - 2 / 202) < 1e-9
    assert abs(rows["rows[ecmp].tput"]["spread"] - 0.5 / 100.5) < 1e-9


def test_spread_ignores_and_reports_missing():
    a = {"kernel_x": 1, "elapsed_s": 5, "x": 1.0, "only_a": 3}
    b = {"kernel_x": 2, "elapsed_s": 9, "x": 1.0}
    rows = {r["figure"]: r for r in hostrun.spread([a, b], ignore=("kernel", "elapsed"))}
    assert set(rows) == {"x", "only_a"}
    assert rows["x"]["spread"] == 0.0 and rows["only_a"]["spread"] is None
    md = "\n".join(hostrun.spread_markdown(list(rows.values()), 2))
    assert "0.00% at most" in md and "1 figures appear in only some runs" in md


def test_header_names_the_clock(tmp_path):
    (tmp_path / "vm.json").write_text(json.dumps(dict(clock="virtual", icount_shift=0, cpus=2,
                                                      memory="2G", kernel="6.12.117", commit="abc")))
    h = hostrun.header(str(tmp_path), 12.3, {"scale": "0.001"})
    assert "virtual time (QEMU icount, shift=0" in h and "kernel 6.12.117" in h and "scale: 0.001" in h
    md = tmp_path / "report.md"
    md.write_text("# Title\n\nbody\n")
    hostrun.insert_header(str(md), h)
    assert md.read_text().splitlines()[:3] == ["# Title", "", h]


def test_percentile_interpolates():
    assert stats.percentile([], 50) is None
    assert stats.percentile([1, 2, 3, 4], 50) == 2.5
    assert abs(stats.percentile(range(1, 1001), 99.9) - 999.001) < 1e-9
    assert stats.cpu_busy((100, 50), (200, 75)) == 0.75


def test_prewarm_reads_tools_and_their_libraries(capsys):
    from dcnet import warm
    files, nbytes, _dt = warm.prewarm(["/bin/sh"])
    # sh, its libc and the dynamic loader at least
    assert files >= 3 and nbytes > 100_000
    assert "prewarm:" in capsys.readouterr().out


def test_headline_figures_are_throughputs_fractions_and_large_sample_fcts():
    res = {"runs": [{"scheme": "ecmp", "elephant_mean_bps": 9e6, "drops": 7,
                     "rtt_us": {"p99": 120.0}, "fct": {"n": 2000, "p99_us": 5.0},
                     "mice": {"n": 10, "p99_us": 9.0}, "missed_fraction": 0.1}]}
    flat = hostrun.flatten(res)
    head = {k for k in flat if hostrun.is_headline(k, flat)}
    assert head == {"runs[ecmp].elephant_mean_bps", "runs[ecmp].fct.p99_us", "runs[ecmp].missed_fraction"}
