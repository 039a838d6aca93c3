"""make check: the host tests, then KUnit and the functional suite in the
debug kernel (KASAN, lockdep) under virtme-ng, split over DCNET_CHECK_VMS
guests that run at once.  Ends with one line "N passed, N failed[, N
skipped]" and fails on any failure.

    python -m dcnet check [--host-only] [--vms N] [--files FILE ...]

While the guests run, a line per finished test file (dcnet/progress.py):
its counts, its guest and wall time, the files done and left in its VM and
an estimate of the time left, read from the VM's guest-results.jsonl as
the guest writes it.
"""
import argparse
import os
import re
import subprocess
import sys
import threading
import time

from dcnet import ROOT, config, progress
from dcnet.host import check_summary, guest_shards

# what of a VM's guest.log the check prints after the run
LOG_LINES = re.compile(r"PASSED|FAILED|ERROR|SKIPPED|passed|failed|guest\| (not )?ok|Error|assert")


def gdir_of(out, i):
    return os.path.join(out, "guest" if i == 0 else f"guest-{i}")


def host_phase(out, py):
    print("check: host tests", flush=True)
    return subprocess.run([py, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfEs",
                           os.path.join(ROOT, "tests", "host"),
                           f"--junitxml={os.path.join(out, 'host-junit.xml')}"], cwd=ROOT).returncode


def _pipe(proc, prefix):
    for line in proc.stdout:
        sys.stdout.write(prefix + line.decode(errors="replace"))
        sys.stdout.flush()


def _watch(trackers, paths, done, t0, interval=5.0):
    """print each VM's finished test files as its JSONL grows"""
    pos = [0] * len(paths)
    tails = [b""] * len(paths)
    while True:
        stop = done.wait(interval)
        for i, path in enumerate(paths):
            evs, pos[i], tails[i] = progress.follow_jsonl(path, pos[i], tails[i])
            for ev in evs:
                for line in trackers[i].feed(ev, time.time() - t0):
                    print(line, flush=True)
        if stop:
            return


def guest_phase(out, py, vms, files=None, kernel=None):
    """boot the VMs, each on its shard; returns (all VMs ok, number of VMs)"""
    durations = guest_shards.load_durations()
    files = files or guest_shards.test_files()
    parts, load = guest_shards.shards(files, durations, vms)
    parts = [p for p in parts if p]
    kernel = kernel or os.path.join(config.get("BUILD"), "obj-debug")
    try:
        with open(os.path.join(kernel, "include", "config", "kernel.release")) as f:
            release = f.read().strip()
    except OSError:
        release = "?"
    print(f"check: KUnit and functional tests in the debug kernel ({release}), {len(parts)} VMs at once",
          flush=True)
    procs, pipes, trackers, paths = [], [], [], []
    t0 = time.time()
    for i, shard in enumerate(parts):
        print(f"check: vm{i}: {len(shard)} files, ~{progress.duration(load[i])} by the recorded durations",
              flush=True)
        gdir = gdir_of(out, i)
        os.makedirs(gdir, exist_ok=True)
        env = dict(os.environ)
        if i:
            env["DCNET_KUNIT"] = ""         # KUnit runs in VM 0 only
        # the VM runner of this tree (cwd ROOT), whichever clone the venv has installed
        cmd = [py, "-m", "dcnet.host.vmrun", "--kernel", kernel, "--out", gdir,
               "--clock", "real", "--timeout", str(config.get("DCNET_CHECK_TIMEOUT")), "--",
               "sh", "tests/guest/run-in-guest.sh"] + shard
        p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        th = threading.Thread(target=_pipe, args=(p, f"  vm{i}| "), daemon=True)
        th.start()
        procs.append(p)
        pipes.append(th)
        trackers.append(progress.Files(f"vm{i}", shard, durations))
        paths.append(os.path.join(gdir, "guest-results.jsonl"))
        if i + 1 < len(parts):
            time.sleep(5)           # the VMs' boots a little apart
    done = threading.Event()
    watcher = threading.Thread(target=_watch, args=(trackers, paths, done, t0), daemon=True)
    watcher.start()
    ok = True
    rcs = [p.wait() for p in procs]
    for th in pipes:
        th.join()
    done.set()
    watcher.join()
    for tr in trackers:
        for line in tr.end(time.time() - t0):
            print(line, flush=True)
    for i, rc in enumerate(rcs):
        if rc != 0:
            ok = False
            print(f"check: vm{i} failed, hung or splatted (its log: {gdir_of(out, i)}/)", flush=True)
    for i in range(len(parts)):
        log = os.path.join(gdir_of(out, i), "guest.log")
        if os.path.exists(log):
            with open(log, errors="replace") as f:
                picked = [f"  vm{i} guest| {line.rstrip()}" for line in f if LOG_LINES.search(f"guest| {line}")]
            print("\n".join(picked[:80]), flush=True)
    return ok, len(parts)


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0],
                                 epilog="Settings: DCNET_CHECK_VMS, DCNET_CHECK_TIMEOUT, "
                                        "DCNET_TEST_TIMEOUT, DCNET_KUNIT (docs/configuration.md).")
    ap.add_argument("--host-only", action="store_true", help="the host tests only (no kernel, no VM)")
    ap.add_argument("--vms", type=int, default=None,
                    help="guests at once (default: DCNET_CHECK_VMS, else 2)")
    ap.add_argument("--files", nargs="+", metavar="FILE",
                    help="these guest test files instead of all of tests/guest (a developer's subset)")
    ap.add_argument("--kernel", default=None, help="the debug build (default: $BUILD/obj-debug)")
    ap.add_argument("--out", default=None, help="results (default: $RESULTS/check)")
    a = ap.parse_args(argv)
    vms = a.vms if a.vms is not None else config.get("DCNET_CHECK_VMS")
    if vms < 1:
        ap.error("--vms wants 1 or more")
    out = os.path.abspath(a.out or os.path.join(config.get("RESULTS"), "check"))
    py = os.path.join(ROOT, ".venv", "bin", "python")
    py = py if os.path.exists(py) else sys.executable
    if os.path.isdir(out):
        import shutil
        shutil.rmtree(out)
    os.makedirs(out)
    t0 = time.time()
    host_rc = host_phase(out, py)
    sargs = ["--host-rc", str(host_rc)]
    if not a.host_only:
        files = [os.path.relpath(os.path.abspath(f), ROOT) for f in a.files] if a.files else None
        ok, n = guest_phase(out, py, vms, files, a.kernel)
        sargs += ["--guest", "--vm-ok", "1" if ok else "0", "--vms", str(n)]
        kunit = config.get("DCNET_KUNIT")
        if kunit is not None:
            # the KUnit modules VM 0 was asked to load (DCNET_KUNIT), not
            # tests/guest/kunit-modules: each of them must report
            path = os.path.join(out, "kunit-modules")
            with open(path, "w") as f:
                f.write("".join(m + "\n" for m in kunit))
            sargs += ["--kunit-modules", path]
    sys.stdout.flush()
    rc = check_summary.main([out] + sargs)
    print(f"check: {time.time() - t0:.0f} s, results in {out}", file=sys.stderr)
    return rc
