"""The host side of every measurement: boot the release kernel, run the
guest side, analyse, render, and (with --repeat N) do it again in N
separate boots and report how far each figure moved.

A bench supplies its guest command and two functions:
    analyse(raw) -> results        (JSON-serialisable, numbers in it)
    render(raw, results, out)      writes PNGs and out/report.md
and calls run(); everything else (the clock, the run header, the repeat
spread, the exit status) is here.
"""
import json
import lzma
import math
import os
import shutil
import subprocess
import sys
import time

from dcnet import config, samples
from dcnet.figures import MIN_FCT_FLOWS, flatten, is_headline  # noqa: F401 (hostrun.flatten)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the VM runner of this repository: run as a module from ROOT, so that it
# is this tree's dcnet whichever clone the venv has installed
VMRUN = ["-m", "dcnet.host.vmrun"]
GUEST_PY = os.path.join(ROOT, ".venv", "bin", "python")
CLOCKS = ("virtual", "real")
REPEAT_GOAL = 0.01      # issue 15: every figure within 1% across boots
# not figures of the network: kernel names, wall and start times, the CPU
IGNORE = ("kernel", "elapsed", "wall", "cpu", "started")
# What one unshaped TCP flow through a router namespace sustains in the
# release guest in virtual time (1050 and 1000 Mbit/s in two boots,
# 2026-11-24): the benches scale their rates from it instead of from a
# per-boot calibration.
VIRTUAL_SUSTAINED_MBIT = 1000


def default_kernel():
    return os.path.join(config.get("BUILD"), "obj-release")


def add_args(ap, out_default, timeout=3600):
    """The options every bench and the testbed share.  The timeout is wall
    time per boot; DCNET_TIMEOUT_SCALE multiplies it (a virtual-time run
    gives the same figures on a loaded host, only later: bench-htb took
    over an hour with six VMs on two cores)."""
    timeout = int(timeout * config.get("DCNET_TIMEOUT_SCALE"))
    ap.add_argument("--kernel", default=default_kernel())
    ap.add_argument("--out", default=out_default)
    ap.add_argument("--clock", choices=CLOCKS, default=None,
                    help="virtual (QEMU icount, the default: repeatable) or real "
                         "(plain TCG); default DCNET_CLOCK, else virtual")
    ap.add_argument("--repeat", type=int, default=config.get("DCNET_REPEAT"),
                    help="boots of the same run (same seeds); >1 reports the largest "
                         "relative difference of every figure")
    ap.add_argument("--samples", type=int, default=config.get("DCNET_SAMPLES"),
                    help="boots with different seeds (QEMU's and every workload's); >1 reports "
                         "each figure's median and range and decides goals over all samples")
    ap.add_argument("--timeout", type=int, default=timeout, help="seconds per boot")
    ap.add_argument("--reanalyse", metavar="DIR", default=None,
                    help="boot nothing: analyse DIR's raw data again (DIR/raw.json[.xz], "
                         "DIR/run*/ or DIR/sample*/raw.json[.xz]) and write results, plots and reports to --out")
    ap.add_argument("--jobs", type=int, default=0,
                    help="boots at a time with --repeat (default: in virtual time one per host "
                         "core, since each runs in one host thread and its results do not "
                         "depend on the host's load; in real time 1)")


def jobs_of(a, n):
    """how many of n boots run at once"""
    if getattr(a, "jobs", 0):
        return max(1, min(n, a.jobs))
    if clock_of(a) == "virtual":
        return max(1, min(n, os.cpu_count() or 1))
    return 1


def boot_all(a, outs, guest_cmd_for, env_for=None):
    """Boot once per directory in outs (guest_cmd_for(out) gives the guest
    command, env_for(out) what it adds to the environment), jobs_of() at a
    time; returns [(rc, wall seconds)]."""
    from concurrent.futures import ThreadPoolExecutor
    clock = clock_of(a)

    def one(out):
        t0 = time.time()
        rc = boot(a.kernel, out, guest_cmd_for(out), a.timeout, clock,
                  env=env_for(out) if env_for else None)
        return rc, time.time() - t0
    with ThreadPoolExecutor(max_workers=jobs_of(a, len(outs))) as ex:
        return list(ex.map(one, outs))


def plan(a, out):
    """The boots of a run: (dirs, env_for).  --repeat N: out/run1.. with
    the same seeds; --samples N: out/sample1.. with sample i's seeds
    (dcnet/samples.py); neither: out itself."""
    rep, smp = max(1, a.repeat), max(1, getattr(a, "samples", 1) or 1)
    if rep > 1 and smp > 1:
        sys.exit("--repeat and --samples together: repeat one sample (--repeat) or take several "
                 "(--samples), not both")
    if smp > 1:
        outs = samples.dirs(out, smp)
        envs = {o: samples.env(i) for i, o in enumerate(outs)}
        return outs, envs.get
    return run_dirs(out, rep), None


def clock_of(a):
    return a.clock or config.get("DCNET_CLOCK") or "virtual"


def boot(kernel, out, guest_cmd, timeout, clock, env=None):
    """One boot; the guest writes out/raw.json.  env: settings that this
    boot adds to the environment (a sample's seeds).  Returns vmrun's
    status."""
    rc = subprocess.run([sys.executable, *VMRUN, "--kernel", kernel, "--out", out,
                         "--timeout", str(timeout), "--clock", clock, "--"] + guest_cmd, cwd=ROOT,
                        env=dict(os.environ, **env) if env else None).returncode
    log = os.path.join(out, "guest.log")
    if os.path.exists(log):
        with open(log, errors="replace") as f:
            sys.stdout.write(f.read())
    return rc


def vm_meta(out):
    try:
        with open(os.path.join(out, "vm.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def header(out, wall_s=None, extra=None):
    """The run header every report carries: clock, shift, vCPUs, kernel,
    commit, wall time, plus what the bench adds (seeds, scale)."""
    m = vm_meta(out)
    if m.get("clock") == "virtual":
        sh = m.get("icount_shift")
        per = (f"{2 ** sh:g} ns per instruction" if isinstance(sh, int) and sh >= 0 else
               f"{2 ** -sh:g} instructions per ns, dilated time" if isinstance(sh, int) else "?")
        clock = f"virtual time (QEMU icount, shift={sh}, sleep=off: {per})"
    elif m.get("clock") == "real":
        clock = "real time (plain TCG: results depend on the host's load)"
    else:
        clock = "unknown clock"
    parts = [f"clock: {clock}", f"{m.get('cpus', '?')} vCPUs ({m.get('accel', 'tcg')}), {m.get('memory', '?')}",
             f"root: {m.get('root', 'host over 9p (virtme-ng)')}"
             + (f", QEMU seed {m['qemu_seed']}" if m.get("qemu_seed") is not None else "")
             + (", record mode" if any("rr=record" in o for o in m.get("qemu_opts") or []) else ""),
             f"kernel {m.get('kernel', '?')}", f"commit {m.get('commit', '?')}"]
    if wall_s is not None:
        parts.append(f"wall time {wall_s:.0f} s")
    for k, v in (extra or {}).items():
        parts.append(f"{k}: {v}")
    return "Run: " + "; ".join(parts) + "."


def insert_header(report_md, line):
    """Put the run header under the report's title."""
    with open(report_md) as f:
        lines = f.read().split("\n")
    at = 1 if lines and lines[0].startswith("#") else 0
    lines[at:at] = ["", line]
    with open(report_md, "w") as f:
        f.write("\n".join(lines))


# ------------------------------------------------------------ repeat spread

def spread(results, ignore=()):
    """Largest relative difference of each figure across runs:
    (max - min) / max(|max|, |min|).  Figures absent from a run are listed
    as missing.  Keys containing any string of `ignore` (wall times,
    kernel versions) are left out."""
    flats = [flatten(r) for r in results]
    keys = sorted(set().union(*flats))
    rows = []
    for k in keys:
        if any(s in k for s in ignore):
            continue
        vals = [f.get(k) for f in flats]
        if any(v is None for v in vals):
            rows.append(dict(figure=k, values=vals, spread=None))
            continue
        hi, lo = max(vals), min(vals)
        den = max(abs(hi), abs(lo))
        rows.append(dict(figure=k, values=vals, spread=0.0 if den == 0 else (hi - lo) / den))
    return rows


def spread_markdown(rows, runs, goal=REPEAT_GOAL, limit=25, flat=None):
    """The Repeatability section: the headline figures (is_headline) against
    the goal, then the largest spread among the rest."""
    flat = flat or {}
    have = [r for r in rows if r["spread"] is not None]
    missing = [r for r in rows if r["spread"] is None]
    head = sorted([r for r in have if is_headline(r["figure"], flat)], key=lambda r: -r["spread"])
    rest = sorted([r for r in have if not is_headline(r["figure"], flat)], key=lambda r: -r["spread"])
    over = [r for r in head if r["spread"] > goal]
    L = ["## Repeatability", "",
         f"The same run (same seeds) in {runs} separate boots. Largest relative difference "
         f"(max - min) / max of each of the {len(head)} headline figures (throughputs, saturation, "
         f"missed-deadline fractions, FCT percentiles over >= {MIN_FCT_FLOWS} flows): "
         f"{(head[0]['spread'] * 100 if head else 0):.2f}% at most; "
         f"{len(over)} of them differ by more than {goal * 100:.0f}%. "
         f"The other {len(rest)} figures (RTT percentiles, drop counts, small-sample FCTs, ...): "
         f"{(rest[0]['spread'] * 100 if rest else 0):.2f}% at most"
         + (f"; {len(missing)} figures appear in only some runs" if missing else "") + ".", ""]
    worst = head
    if worst:
        L += ["| figure | " + " | ".join(f"run {i + 1}" for i in range(runs)) + " | spread |",
              "|---|" + "---|" * runs + "---|"]
        for r in worst[:limit]:
            L.append(f"| `{r['figure']}` | " + " | ".join(f"{v:.4g}" for v in r["values"])
                     + f" | {r['spread'] * 100:.2f}% |")
        if len(worst) > limit:
            L.append(f"| ({len(worst) - limit} more, all below {worst[limit - 1]['spread'] * 100:.2f}%) |"
                     + " |" * (runs + 1))
    return L


# --------------------------------------------------------------- the driver

def run_dirs(out, repeat):
    """out itself for one boot, out/run1.. for several; made, and cleared of
    an earlier run's raw.json (which must not pass for this one's)"""
    n = max(1, repeat)
    outs = [out if n == 1 else os.path.join(out, f"run{i + 1}") for i in range(n)]
    for o in outs:
        os.makedirs(o, exist_ok=True)
        if os.path.exists(os.path.join(o, "raw.json")):
            os.unlink(os.path.join(o, "raw.json"))
    return outs


def finish_repeat(out, results, walls, clock, name, ignore=IGNORE):
    """After n > 1 boots into out/run1.. : repeat.json, run 1's report and
    plots in out/ with the Repeatability section appended, one line on
    stdout."""
    n = len(results)
    rows = spread(results, ignore)
    flat = flatten(results[0])
    for r in rows:
        r["headline"] = is_headline(r["figure"], flat)
    with open(os.path.join(out, "repeat.json"), "w") as f:
        json.dump(dict(runs=n, clock=clock, wall_s=walls, figures=rows), f, indent=1)
    for fn in os.listdir(os.path.join(out, "run1")):
        if fn.endswith((".png", ".md")):
            shutil.copy(os.path.join(out, "run1", fn), os.path.join(out, fn))
    with open(os.path.join(out, "report.md"), "a") as f:
        f.write("\n" + "\n".join(spread_markdown(rows, n, flat=flat)) + "\n\n"
                + "Each run's own report: " + ", ".join(f"[run {i + 1}](run{i + 1}/report.md)"
                                                          for i in range(n)) + ".\n")
    have = [r["spread"] for r in rows if r["spread"] is not None and r["headline"]]
    print(f"{name}: {n} runs, largest headline figure spread {max(have or [0]) * 100:.2f}% "
          f"({sum(1 for x in have if x > REPEAT_GOAL)} of {len(have)} figures above "
          f"{REPEAT_GOAL * 100:.0f}%)")
    return rows


def run(a, guest_cmd, analyse, render, name, extra_header=None, ignore=IGNORE):
    """Boot a.repeat times, analyse and render each run; with more than one
    run, out/ holds run1/, run2/, ... and out/report.md is run 1's report
    with the repeat spread appended (out/repeat.json has every figure)."""
    if getattr(a, "reanalyse", None):
        return reanalyse(a.reanalyse, a.out, analyse, render, name, extra_header, ignore)
    out = os.path.abspath(a.out)
    clock = clock_of(a)
    outs, env_for = plan(a, out)
    n = len(outs)
    boots = boot_all(a, outs, lambda o: guest_cmd, env_for)
    results = []
    walls = []
    for i, (run_out, (rc, wall)) in enumerate(zip(outs, boots)):
        raw_path = os.path.join(run_out, "raw.json")
        if rc != 0 or not os.path.exists(raw_path):
            sys.exit(f"{name}: the guest run failed (boot {i + 1} of {n}; see {run_out}/guest.log)")
        with open(raw_path) as f:
            raw = json.load(f)
        res = analyse(raw)
        with open(os.path.join(run_out, "results.json"), "w") as f:
            json.dump(res, f, indent=1)
        render(raw, res, run_out)
        walls.append(wall)
        extra = extra_header(raw, res) if extra_header else None
        insert_header(os.path.join(run_out, "report.md"), header(run_out, wall, extra))
        results.append(res)
    finish_runs(a, out, results, walls, clock, name, ignore)
    print(open(os.path.join(out, "report.md")).read())
    return results


def finish_runs(a, out, results, walls, clock, name, ignore=IGNORE):
    """the Repeatability or Samples section of a run of several boots"""
    if len(results) > 1 and max(1, getattr(a, "samples", 1) or 1) > 1:
        samples.finish(out, results, walls, name, ignore)
    elif len(results) > 1:
        finish_repeat(out, results, walls, clock, name, ignore)


def boot_subdirs(d, prefix):
    """d's PREFIX1, PREFIX2, ... (the boots of a --repeat or --samples
    run), in order"""
    n = len(prefix)
    return sorted((x for x in os.listdir(d) if x.startswith(prefix) and x[n:].isdigit()),
                  key=lambda x: int(x[n:]))


def _load_raw(d):
    for fn in ("raw.json", "raw.json.xz"):
        path = os.path.join(d, fn)
        if os.path.exists(path):
            opener = lzma.open if fn.endswith(".xz") else open
            with opener(path, "rt") as f:
                return json.load(f)
    return None


def reanalyse(src, out, analyse, render, name, extra_header=None, ignore=IGNORE):
    """A finished run's raw data (src/raw.json, src/run*/raw.json or
    src/sample*/raw.json, plain or .xz) analysed again into out/, with the same layout as run()
    writes: for a change of analysis, not of measurement.  Each report
    says which raw data it read; the wall time is not known again."""
    src, out = os.path.abspath(src), os.path.abspath(out)
    runs = boot_subdirs(src, "run")
    sampled = not runs and bool(boot_subdirs(src, "sample"))
    runs = runs or boot_subdirs(src, "sample")
    pairs = [(os.path.join(src, d), os.path.join(out, d)) for d in runs] or [(src, out)]
    results = []
    for run_src, run_out in pairs:
        raw = _load_raw(run_src)
        if raw is None:
            sys.exit(f"{name}: no raw.json in {run_src}")
        os.makedirs(run_out, exist_ok=True)
        for fn in ("vm.json",):
            if os.path.exists(os.path.join(run_src, fn)) and run_src != run_out:
                shutil.copy(os.path.join(run_src, fn), os.path.join(run_out, fn))
        res = analyse(raw)
        with open(os.path.join(run_out, "results.json"), "w") as f:
            json.dump(res, f, indent=1)
        render(raw, res, run_out)
        extra = extra_header(raw, res) if extra_header else None
        insert_header(os.path.join(run_out, "report.md"),
                      header(run_out, None, extra) + f" Re-analysed from the raw data of "
                      f"`{os.path.relpath(run_src, ROOT) if run_src.startswith(ROOT + os.sep) else run_src}` "
                      "(no new boot).")
        results.append(res)
    if len(results) > 1 and sampled:
        samples.finish(out, results, [None] * len(results), name, ignore)
    elif len(results) > 1:
        clock = (vm_meta(pairs[0][0]) or {}).get("clock")
        finish_repeat(out, results, [None] * len(results), clock, name, ignore)
    print(open(os.path.join(out, "report.md")).read())
    return results


def respread(out, ignore=IGNORE):
    """(Re)compute the repeat spread of out/run*/results.json: rows, and
    the Markdown section (what run() and the testbed append to report.md)."""
    runs = sorted((d for d in os.listdir(out) if d.startswith("run") and d[3:].isdigit()),
                  key=lambda d: int(d[3:]))
    results = []
    for d in runs:
        with open(os.path.join(out, d, "results.json")) as f:
            results.append(json.load(f))
    rows = spread(results, ignore)
    flat = flatten(results[0])
    for r in rows:
        r["headline"] = is_headline(r["figure"], flat)
    return rows, spread_markdown(rows, len(results), flat=flat)


def rewrite(out):
    """Replace the Repeatability section of out/report.md and out/repeat.json
    with the spread recomputed from out/run*/results.json."""
    rows, md = respread(out)
    path = os.path.join(out, "report.md")
    with open(path) as f:
        text = f.read()
    head = text.split("\n## Repeatability", 1)[0].rstrip("\n")
    tail = ""
    if "\nEach run's own report:" in text:
        tail = "\n\n" + "Each run's own report:" + text.split("\nEach run's own report:", 1)[1]
    with open(path, "w") as f:
        f.write(head + "\n\n" + "\n".join(md) + tail.rstrip("\n") + "\n")
    try:
        with open(os.path.join(out, "repeat.json")) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        meta = {}
    meta["figures"] = rows
    with open(os.path.join(out, "repeat.json"), "w") as f:
        json.dump(meta, f, indent=1)
    return md


if __name__ == "__main__":
    # python -m dcnet.hostrun DIR [--write]: the repeat spread of
    # DIR/run*/results.json (--write: into DIR/report.md and repeat.json)
    if "--write" in sys.argv[2:]:
        print("\n".join(rewrite(sys.argv[1])))
    else:
        print("\n".join(respread(sys.argv[1])[1]))
