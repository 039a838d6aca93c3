"""python -m dcnet: one command drives everything the Makefile runs in
Python, each command's --help works, and the old command paths still run."""
import os
import re
import subprocess
import sys

import pytest

from dcnet import ROOT, cli

PY = sys.executable


def dcnet(*args, env=None):
    e = dict(os.environ, PYTHONPATH=ROOT)
    e.update(env or {})
    return subprocess.run([PY, "-m", "dcnet", *args], cwd=ROOT, capture_output=True, text=True,
                          env=e, timeout=120)


def recipes():
    """{target: [recipe lines]} of the Makefile (continuations joined)"""
    with open(os.path.join(ROOT, "Makefile")) as f:
        text = f.read().replace("\\\n", " ")
    out, target = {}, None
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z0-9_$%(). -]+?):(?!=)", line)
        if m and not line.startswith("\t"):
            target = m.group(1).strip()
            out.setdefault(target, [])
        elif line.startswith("\t") and target:
            out[target].append(line.strip())
    return out


def test_every_makefile_target_that_runs_python_goes_through_the_cli():
    bad = []
    for target, lines in recipes().items():
        for line in lines:
            runs_py = ("$(PY)" in line or re.search(r"\bpython3?\b", line) or re.search(r"\S+\.py\b", line)
                       or "scripts/check.sh" in line)
            if runs_py and "$(DCNET)" not in line:
                bad.append(f"{target}: {line}")
            if "$(DCNET)" in line and re.search(r"\S+\.py\b", line):
                bad.append(f"{target}: runs a .py file beside the CLI: {line}")
    assert not bad, "Makefile recipes that run Python outside `$(DCNET)` (python -m dcnet):\n" + "\n".join(bad)
    with open(os.path.join(ROOT, "Makefile")) as f:
        assert "\nDCNET := $(PY) -m dcnet\n" in f.read()


def test_the_cli_knows_every_bench_target():
    with open(os.path.join(ROOT, "Makefile")) as f:
        mk = f.read()
    presto = re.search(r"^PRESTO_EXPS := (.*)$", mk, re.M).group(1).split()
    assert tuple(presto) == cli.PRESTO
    targets = [t for t in recipes() if t.startswith("bench-") and "%" not in t and "$(" not in t]
    targets += [f"bench-presto-{p}" for p in presto]
    for t in targets:
        name = t[len("bench-"):]
        assert name in cli.BENCHES, f"make {t}: no `python -m dcnet bench {name}`"
    for t, lines in recipes().items():
        for line in lines:
            m = re.search(r"\$\(DCNET\) bench (\S+)", line)
            if m:
                name = m.group(1).replace("$*", "rx")
                assert name in cli.BENCHES, f"make {t}: {line}"


def test_help_of_every_command_and_bench():
    r = dcnet("--help")
    assert r.returncode == 0 and all(c in r.stdout for c in cli.COMMANDS), r.stdout + r.stderr
    for c in cli.COMMANDS:
        r = dcnet(c, "--help")
        assert r.returncode == 0, f"{c} --help: {r.stderr}"
        assert "usage" in r.stdout.lower() or c in r.stdout, (c, r.stdout)
    r = dcnet("bench", "--help")
    assert r.returncode == 0 and all(b in r.stdout for b in cli.BENCHES)
    for b in cli.BENCHES:
        r = dcnet("bench", b, "--help")
        assert r.returncode == 0, f"bench {b} --help: {r.stderr}"
        assert "usage" in r.stdout.lower(), (b, r.stdout)


def test_an_unknown_command_or_bench_fails_with_the_list():
    r = dcnet("benchh")
    assert r.returncode == 2
    r = dcnet("bench", "d2tpc")
    assert r.returncode != 0 and "d2tcp" in r.stderr


@pytest.mark.parametrize("path", ["bench/d2tcp.py", "bench/htb.py", "bench/fastlane.py",
                                  "bench/determinism.py", "bench/fastlane_clos.py", "testbed/run.py",
                                  "testbed/report.py", "testbed/workloads.py", "testbed/experiment.py",
                                  "scripts/vmrun.py"])
def test_the_old_command_paths_still_work(path):
    r = subprocess.run([PY, os.path.join(ROOT, path), "--help"], cwd=ROOT, capture_output=True,
                       text=True, env=dict(os.environ, PYTHONPATH=ROOT), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip()


def test_check_sh_runs_the_cli():
    r = subprocess.run([os.path.join(ROOT, "scripts", "check.sh"), "--help"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "python -m dcnet check" in r.stdout, r.stdout + r.stderr


def test_defaults_fill_only_what_is_not_given():
    assert cli._with_defaults(["--out", "X"], out="Y", fanins=40) == ["--fanins", "40", "--out", "X"]
    assert cli._with_defaults(["--out=X"], out="Y") == ["--out=X"]


def test_testbed_cells_select_by_pattern():
    from dcnet.testbed import run
    exp = {"schemes": [{"name": "ecmp"}, {"name": "presto"}],
           "workloads": [{"name": "stride"}, {"name": "random", "with": [{"name": "mice"}]},
                         {"name": "bijection", "label": "bij"}]}
    assert run.cells_of(exp) == ["ecmp/stride", "ecmp/random+mice", "ecmp/bij",
                                 "presto/stride", "presto/random+mice", "presto/bij"]
    assert run.cells_of(exp, "presto/*") == ["presto/stride", "presto/random+mice", "presto/bij"]
    assert run.cells_of(exp, "*/stride, ecmp/bij") == ["ecmp/stride", "ecmp/bij", "presto/stride"]
    assert run.cells_of(exp, "nope") == []


def test_testbed_reanalyse_gives_the_committed_results(tmp_path):
    """re-analysing committed raw data (docs/results/presto-rx) gives its
    results.json to the byte"""
    src = os.path.join(ROOT, "docs", "results", "presto-rx")
    r = dcnet("testbed", "--reanalyse", src, "--out", str(tmp_path / "re"))
    assert r.returncode == 0, r.stderr[-2000:]
    with open(os.path.join(src, "results.json"), "rb") as a, open(tmp_path / "re" / "results.json", "rb") as b:
        assert a.read() == b.read()


def test_check_counts_the_kunit_modules_it_asked_for(tmp_path, monkeypatch):
    """DCNET_KUNIT="" (none) or a list: the summary expects those, not
    every module of tests/guest/kunit-modules"""
    from dcnet.host import check
    seen = {}
    monkeypatch.setattr(check, "host_phase", lambda out, py: 0)
    monkeypatch.setattr(check, "guest_phase", lambda out, py, vms, files, kernel: (True, 1))

    def summary(argv):
        seen["argv"] = argv
        i = argv.index("--kunit-modules") if "--kunit-modules" in argv else None
        seen["modules"] = None if i is None else open(argv[i + 1]).read().split()
        return 0
    monkeypatch.setattr(check.check_summary, "main", summary)
    monkeypatch.setenv("DCNET_KUNIT", "")
    assert check.main(["--out", str(tmp_path / "c")]) == 0
    assert seen["modules"] == []
    monkeypatch.setenv("DCNET_KUNIT", "tcp_d2tcp_kunit presto_gro_kunit")
    check.main(["--out", str(tmp_path / "c")])
    assert seen["modules"] == ["tcp_d2tcp_kunit", "presto_gro_kunit"]
    monkeypatch.delenv("DCNET_KUNIT")
    check.main(["--out", str(tmp_path / "c")])
    assert seen["modules"] is None
    check.main(["--out", str(tmp_path / "c"), "--host-only"])
    assert "--guest" not in seen["argv"]
