"""make check's harness: a hanging test is reported by name and the suite
goes on, a failing host test fails the check, a KUnit module that does not
load fails its suite, a VM runner timeout leaves no process behind, and
the clock switch gives QEMU the instruction-counting clock."""
import json
import os
import subprocess
import sys
import time

import pytest

from dcnet.host import check_summary
from dcnet.host import vmrun
from dcnet.wait import wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_guest_like_pytest(tmp_path, body, timeout=3):
    """Run pytest the way tests/guest/run-in-guest.sh does (the jsonl
    plugin, pytest-timeout by signal) on a generated test file."""
    tdir = tmp_path / "suite"
    tdir.mkdir()
    (tdir / "test_x.py").write_text(body)
    gdir = tmp_path / "out" / "guest"
    gdir.mkdir(parents=True)
    env = dict(os.environ, PYTHONPATH=ROOT, DCNET_JSONL=str(gdir / "guest-results.jsonl"))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-p", "dcnet.host.pytest_jsonl", f"--timeout={timeout}", "--timeout-method=signal",
                        "test_x.py"], env=env, capture_output=True, text=True, timeout=120, cwd=tdir)
    return r, gdir


def write_host_junit(out, failures=0):
    cases = "".join(f'<testcase classname="h" name="ok{i}"/>' for i in range(2))
    cases += "".join(f'<testcase classname="h" name="bad{i}"><failure/></testcase>'
                     for i in range(failures))
    (out / "host-junit.xml").write_text(f"<testsuites><testsuite>{cases}</testsuite></testsuites>")


def write_kunit(gdir, suite, cases=2, top="ok"):
    lines = ["KTAP version 1", f"# Subtest: {suite}", f"1..{cases}"]
    lines += [f"    ok {i + 1} case{i}" for i in range(cases)]
    lines.append(f"{top} 1 {suite}")
    (gdir / f"kunit-{suite}.ktap").write_text("\n".join(lines) + "\n")


def guest_dir(out, kunit=("alpha", "beta"), events=None):
    """out/ with a clean host junit, passing KUnit suites and guest events"""
    gdir = out / "guest"
    gdir.mkdir(exist_ok=True)
    write_host_junit(out)
    for suite in kunit:
        write_kunit(gdir, suite)
    if events is None:
        events = [{"event": "result", "test": "t::a", "when": "call", "outcome": "passed"}]
    with open(gdir / "guest-results.jsonl", "w") as f:
        for ev in events:
            f.write(json.dumps(ev) + "\n")
    return gdir


def summary(out, capsys, **kw):
    mods = out / "mods"
    mods.write_text("# test\nalpha_kunit\nbeta_kunit\n")
    argv = [str(out), "--host-rc", str(kw.get("host_rc", 0)), "--kunit-modules", str(mods)]
    if kw.get("guest", True):
        argv += ["--guest", "--vm-ok", str(kw.get("vm_ok", 1)), "--vms", str(kw.get("vms", 1))]
    rc = check_summary.main(argv)
    return rc, capsys.readouterr().out


def summary_of_run(gdir, capsys):
    """the summary of a guest-like pytest run in gdir, with a clean host
    junit and passing KUnit suites beside it"""
    out = gdir.parent
    write_host_junit(out)
    write_kunit(gdir, "alpha")
    write_kunit(gdir, "beta")
    return summary(out, capsys)


def test_hanging_test_is_named_and_the_suite_goes_on(tmp_path, capsys):
    r, gdir = run_guest_like_pytest(tmp_path, (
        "import time\n"
        "def test_a(): assert 1\n"
        "def test_hangs(): time.sleep(3600)\n"
        "def test_c(): assert 2\n"))
    assert r.returncode == 1, r.stdout
    rc, text = summary_of_run(gdir, capsys)
    assert rc == 1
    assert "FAILED guest: test_x.py::test_hangs" in text
    # the tests before and after the hang still count
    assert "  guest pytest: 2 passed, 1 failed, 0 skipped" in text
    assert text.rstrip().endswith("8 passed, 1 failed")


def test_a_failure_says_what_the_assertion_saw(tmp_path, capsys):
    """the summary's FAILED line carries the failure's "E" lines, so that a
    run read from its last lines (a CI log) says why, not only what"""
    r, gdir = run_guest_like_pytest(tmp_path, (
        "def test_a(): assert 1\n"
        "def test_b():\n"
        "    x = 41\n"
        "    assert x == 42, 'the answer moved'\n"))
    assert r.returncode == 1, r.stdout
    rc, text = summary_of_run(gdir, capsys)
    assert rc == 1
    line = [l for l in text.splitlines() if l.startswith("FAILED guest: test_x.py::test_b")][0]
    assert "the answer moved" in line and "41 == 42" in line, line


def test_vm_death_mid_test_names_the_running_test(tmp_path, capsys):
    out = tmp_path
    gdir = guest_dir(out, events=[{"event": "start", "test": "t::a"},
                                  {"event": "result", "test": "t::a", "when": "call", "outcome": "passed"},
                                  {"event": "start", "test": "t::b"}])
    with open(gdir / "guest-results.jsonl", "a") as f:
        f.write('{"event": "res')      # cut short by the VM's end
    rc, text = summary(out, capsys, vm_ok=0)
    assert rc == 1
    assert "FAILED guest: t::b started and never finished" in text
    assert "FAILED vm:" in text
    assert "  guest pytest: 1 passed, 1 failed, 0 skipped" in text


def test_failing_host_test_fails_the_check(tmp_path, capsys):
    write_host_junit(tmp_path, failures=1)
    rc, text = summary(tmp_path, capsys, host_rc=1, guest=False)
    assert rc == 1
    assert "FAILED host: h::bad0" in text
    assert text.rstrip().endswith("2 passed, 1 failed")


def test_host_pytest_crash_fails_even_with_a_clean_junit(tmp_path, capsys):
    write_host_junit(tmp_path)
    rc, text = summary(tmp_path, capsys, host_rc=2, guest=False)
    assert rc == 1
    assert "FAILED host: pytest exited 2" in text


def test_kunit_counted_per_suite_and_a_module_that_did_not_load_fails(tmp_path, capsys):
    out = tmp_path
    gdir = guest_dir(out, kunit=())
    write_kunit(gdir, "alpha", cases=3)
    (gdir / "kunit-beta.ktap").write_text("not ok 1 beta # module beta_kunit did not load\n")
    rc, text = summary(out, capsys)
    assert rc == 1
    assert "  kunit alpha: 3 passed, 0 failed, 0 skipped" in text
    assert "FAILED kunit: beta: module beta_kunit did not load" in text
    # alpha's passes must not make beta look fine
    assert "  kunit beta: 0 passed, 1 failed" in text


def test_kunit_suite_missing_entirely_fails(tmp_path, capsys):
    out = tmp_path
    guest_dir(out, kunit=("alpha",))
    rc, text = summary(out, capsys)
    assert rc == 1
    assert "FAILED kunit: beta: no results" in text


def test_clean_run_passes(tmp_path, capsys):
    out = tmp_path
    events = []
    for t in ("t::a", "t::b"):
        events += [{"event": "start", "test": t},
                   {"event": "result", "test": t, "when": "call", "outcome": "passed"}]
    guest_dir(out, events=events + [{"event": "result", "test": "t::c", "when": "setup", "outcome": "skipped"}])
    rc, text = summary(out, capsys)
    assert rc == 0, text
    assert text.rstrip().endswith("8 passed, 0 failed, 1 skipped")


def fake_kernel(tmp_path):
    """a build directory vmrun accepts (an empty bzImage; vng is a stand-in)"""
    kdir = tmp_path / "k"
    (kdir / "arch/x86/boot").mkdir(parents=True)
    (kdir / "arch/x86/boot/bzImage").write_text("")
    return kdir


FAKE_VNG = """#!/bin/sh
# a vng that starts a "qemu" child and hangs
sleep 3600 &
echo $! > {pidfile}
wait
"""


def test_vm_timeout_ends_qemu_too(tmp_path, monkeypatch):
    pidfile = tmp_path / "child.pid"
    vng = tmp_path / "vng"
    vng.write_text(FAKE_VNG.format(pidfile=pidfile))
    vng.chmod(0o755)
    kdir = fake_kernel(tmp_path)
    monkeypatch.setenv("DCNET_VNG", str(vng))
    monkeypatch.setenv("DCNET_VM_ROOT", "9p")
    t0 = time.time()
    rc = vmrun.run(str(kdir), str(tmp_path / "out"), ["true"], timeout=2, cpus=1,
                   memory="1G", verbose=False, clock="virtual")
    assert rc == 1
    assert time.time() - t0 < 30
    child = int(pidfile.read_text())

    def gone():
        try:
            return open(f"/proc/{child}/stat").read().split()[2] == "Z"
        except FileNotFoundError:
            return True
    wait_until(gone, 5, f"the fake QEMU (pid {child}) is gone after the VM's timeout")
    meta = json.load(open(tmp_path / "out" / "vm.json"))
    assert meta["clock"] == "virtual" and meta["icount_shift"] == 0


def test_clock_options():
    assert vmrun.clock_opts("virtual") == ["-icount", "shift=0,sleep=off"]
    assert vmrun.clock_opts("real") == []
    with pytest.raises(ValueError):
        vmrun.clock_opts("fast")


def test_default_cpus_one_in_virtual_time(monkeypatch):
    """icount's vCPUs share one timeline: virtual time gets one vCPU,
    real time keeps two, DCNET_VM_CPUS overrides, nonsense is refused."""
    monkeypatch.delenv("DCNET_VM_CPUS", raising=False)
    assert vmrun.default_cpus("virtual") == 1
    assert vmrun.default_cpus("real") == 2
    monkeypatch.setenv("DCNET_VM_CPUS", "3")
    assert vmrun.default_cpus("virtual") == 3
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("DCNET_VM_CPUS", bad)
        with pytest.raises(SystemExit):
            vmrun.default_cpus("virtual")


def test_root_mode_sealed_in_virtual_time(monkeypatch):
    monkeypatch.delenv("DCNET_VM_ROOT", raising=False)
    assert vmrun.root_mode("virtual") == "sealed"
    assert vmrun.root_mode("real") == "9p"
    monkeypatch.setenv("DCNET_VM_ROOT", "9p")
    assert vmrun.root_mode("virtual") == "9p"
    monkeypatch.setenv("DCNET_VM_ROOT", "nfs")
    with pytest.raises(SystemExit):
        vmrun.root_mode("virtual")


def test_sealed_results_leave_over_the_console(tmp_path):
    """The guest's base64 tar between the markers becomes files in OUT;
    the console keeps its other lines; a damaged archive is reported,
    not extracted; a console without one gives None."""
    import base64
    import io
    import tarfile
    from dcnet.host import sealed
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        data = b'{"x": 1}'
        ti = tarfile.TarInfo("./raw.json")
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    b64 = base64.encodebytes(buf.getvalue()).replace(b"\n", b"\r\n")
    con = tmp_path / "console"
    con.write_bytes(b"[ 1.0] booted\r\n" + sealed.BEGIN.encode() + b"\r\n" + b64 +
                    sealed.END.encode() + b"\r\n[ 2.0] reboot: Power down\r\n")
    out = tmp_path / "out"
    out.mkdir()
    assert sealed.unpack(str(con), str(out)) == 1
    assert (out / "raw.json").read_bytes() == data
    text = con.read_text()
    assert "booted" in text and "Power down" in text and sealed.BEGIN not in text
    con.write_bytes(sealed.BEGIN.encode() + b"\nnot base64 at all!!\n" + sealed.END.encode())
    assert sealed.unpack(str(con), str(tmp_path / "out2")) is None
    con.write_bytes(b"[ 1.0] Kernel panic\n")
    assert sealed.unpack(str(con), str(out)) is None


def test_seed_reaches_qemu_and_vm_json(tmp_path, monkeypatch):
    """DCNET_VM_SEED becomes QEMU's -seed and is recorded; a non-number
    is refused before anything boots."""
    vng = tmp_path / "vng"
    vng.write_text("#!/bin/sh\necho \"$@\" > " + str(tmp_path / "argv") + "\n"
                   "for a; do case $a in sh\\ *) s=${a#sh };; esac; done\n"
                   "out=$(sed -n 's/^export DCNET_OUT=//p' $s); echo 0 > $out/status\n")
    vng.chmod(0o755)
    kdir = fake_kernel(tmp_path)
    monkeypatch.setenv("DCNET_VNG", str(vng))
    monkeypatch.setenv("DCNET_VM_SEED", "7")
    monkeypatch.setenv("DCNET_VM_ROOT", "9p")
    rc = vmrun.run(str(kdir), str(tmp_path / "out"), ["true"], timeout=20, cpus=1,
                   memory="1G", verbose=False, clock="virtual")
    assert rc == 0
    assert "-icount shift=0,sleep=off -seed 7" in (tmp_path / "argv").read_text()
    assert json.load(open(tmp_path / "out" / "vm.json"))["qemu_seed"] == 7
    monkeypatch.setenv("DCNET_VM_SEED", "x")
    with pytest.raises(SystemExit):
        vmrun.run(str(kdir), str(tmp_path / "out2"), ["true"], timeout=20, cpus=1,
                  memory="1G", verbose=False, clock="virtual")


def test_console_splat_fails_the_run(tmp_path, monkeypatch):
    vng = tmp_path / "vng"
    # a guest that reports success, but whose console shows a splat
    vng.write_text("#!/bin/sh\nfor a; do case $a in sh\\ *) s=${a#sh };; esac; done\n"
                   "echo '[ 1.0] BUG: KASAN: use-after-free in x'\n"
                   "out=$(sed -n 's/^export DCNET_OUT=//p' $s); echo 0 > $out/status\n")
    vng.chmod(0o755)
    kdir = fake_kernel(tmp_path)
    monkeypatch.setenv("DCNET_VNG", str(vng))
    rc = vmrun.run(str(kdir), str(tmp_path / "out"), ["true"], timeout=20, cpus=1,
                   memory="1G", verbose=False)
    assert (tmp_path / "out" / "status").read_text().strip() == "0"
    assert rc == 1


def test_dcnet_settings_reach_the_guest_but_not_the_runners_own():
    s = vmrun.passed_env({"DCNET_KUNIT": "", "DCNET_TEST_TIMEOUT": "60", "DCNET_OUT": "/x",
                          "DCNET_CLOCK": "real", "DCNET_BAD-NAME": "1", "HOME": "/root",
                          "DCNET_X": "a b; rm -rf /"})
    assert s == "export DCNET_KUNIT=''\nexport DCNET_TEST_TIMEOUT=60\nexport DCNET_X='a b; rm -rf /'\n"


def test_two_vms_each_counted_and_a_vm_that_ran_nothing_fails(tmp_path, capsys):
    out = tmp_path
    guest_dir(out)          # VM 0: KUnit and one passing test
    g1 = out / "guest-1"
    g1.mkdir()
    with open(g1 / "guest-results.jsonl", "w") as f:
        for t in ("u::a", "u::b"):
            f.write(json.dumps({"event": "start", "test": t}) + "\n")
            f.write(json.dumps({"event": "result", "test": t, "when": "call", "outcome": "passed"}) + "\n")
    rc, text = summary(out, capsys, vms=2)
    assert rc == 0, text
    assert "  guest pytest vm0: 1 passed, 0 failed, 0 skipped" in text
    assert "  guest pytest vm1: 2 passed, 0 failed, 0 skipped" in text
    assert text.rstrip().endswith("9 passed, 0 failed")
    # a third VM that never started its suite fails the check
    rc, text = summary(out, capsys, vms=3)
    assert rc == 1
    assert "FAILED guest pytest vm2: no results" in text


def test_guest_shards_split_every_file_once_longest_first():
    from dcnet.host import guest_shards
    files = [f"tests/guest/test_{c}.py" for c in "abcdef"]
    secs = {files[0]: 500, files[1]: 400, files[2]: 300, files[3]: 100, files[4]: 100}
    parts, load = guest_shards.shards(files, secs, 2, kunit_s=60, default_s=50)
    assert sorted(f for p in parts for f in p) == files
    # LPT, vm0 starting with KUnit's 60 s: a (500) to vm1, b (400) and
    # c (300) to vm0, then d, e (100) and f (default 50) to vm1
    assert parts[0] == [files[1], files[2]]
    assert parts[1] == [files[0], files[3], files[4], files[5]]
    assert load == [760.0, 750.0]
    # the same input splits the same way; more VMs than files: one file each
    assert guest_shards.shards(files, secs, 2, kunit_s=60, default_s=50)[0] == parts
    assert [len(p) for p in guest_shards.shards(files[:2], secs, 4)[0]] == [1, 1]
    # the repository's own suite: every test file in exactly one VM
    real = guest_shards.test_files()
    got = guest_shards.shards(real, guest_shards.load_durations(), 2)[0]
    assert sorted(f for p in got for f in p) == real and all(got)


def test_guest_shards_measure_each_tests_wall_time_per_file(tmp_path):
    from dcnet.host import guest_shards
    for d, evs in (("guest", [("start", "tests/guest/test_a.py::x", 10.0),
                              ("result", "tests/guest/test_a.py::x", 25.5),
                              ("start", "tests/guest/test_b.py::y", 30.0),
                              ("result", "tests/guest/test_b.py::y", 31.0),
                              ("result", "tests/guest/test_b.py::y", 32.0)]),
                   ("guest-1", [("start", "tests/guest/test_a.py::z", 5.0),
                                ("result", "tests/guest/test_a.py::z", 9.0),
                                ("start", "tests/guest/test_c.py::hung", 9.0)])):
        (tmp_path / d).mkdir()
        with open(tmp_path / d / "guest-results.jsonl", "w") as f:
            for ev, test, t in evs:
                f.write(json.dumps({"event": ev, "test": test, "t": t}) + "\n")
            f.write('{"event": "res')      # a line cut short
    # setup to teardown (the last result), both VMs; a test that never
    # reported adds nothing
    assert guest_shards.measured(str(tmp_path)) == {"tests/guest/test_a.py": 19.5,
                                                    "tests/guest/test_b.py": 2.0}


def test_sealed_icount_records_unless_told_not_to(monkeypatch):
    """A sealed guest runs in QEMU's record mode (the replay mutex closes
    the warp race, dcnet/host/sealed.py), its log discarded; DCNET_VM_RR=off
    gives plain icount; anything else is refused."""
    from dcnet.host import sealed
    monkeypatch.delenv("DCNET_VM_RR", raising=False)
    argv = sealed.qemu_argv("img", "bz", 1, "2G", "con")
    assert argv[argv.index("-icount") + 1] == "shift=0,sleep=off,rr=record,rrfile=/dev/null"
    monkeypatch.setenv("DCNET_VM_RR", "off")
    argv = sealed.qemu_argv("img", "bz", 1, "2G", "con")
    assert argv[argv.index("-icount") + 1] == "shift=0,sleep=off"
    monkeypatch.setenv("DCNET_VM_RR", "replay")
    with pytest.raises(SystemExit):
        sealed.qemu_argv("img", "bz", 1, "2G", "con")


def test_follow_prints_the_console_as_it_grows_but_not_the_results(tmp_path, capsys):
    """A sealed guest's console is shown while it runs (vmrun.Follow):
    whole lines as they arrive, the results archive left out."""
    from dcnet.host import sealed
    con = tmp_path / "console"
    con.write_bytes(b"sealed: booted\r\ntable1 plain  1 fl")
    f = vmrun.Follow(str(con), interval=0.05)
    f.poll()
    assert capsys.readouterr().err == "guest: sealed: booted\n"
    with open(con, "ab") as w:
        w.write(b"ows: rtt 1\n\n" + sealed.BEGIN.encode() + b"\nAAAA\n" + sealed.END.encode() + b"\n")
    f.poll()
    assert capsys.readouterr().err == "guest: table1 plain  1 flows: rtt 1\nguest: \n"


def test_sealed_guest_tees_its_output_unless_told_not_to(monkeypatch):
    monkeypatch.delenv("DCNET_VM_PROGRESS", raising=False)
    assert vmrun.progress_on()
    script = vmrun.LOG_SEALED.format(cmd="sh x.sh", out="/dcnet/out")
    assert "| tee /tmp/dcnet-guest.log" in script and "rc=$(cat /tmp/dcnet-rc)" in script
    monkeypatch.setenv("DCNET_VM_PROGRESS", "0")
    assert not vmrun.progress_on()
