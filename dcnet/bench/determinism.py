#!/usr/bin/env python3
"""What of a virtual-time guest repeats from one boot to the next.

    bench/determinism.py --kernel BUILD/obj-release --out DIR [--boots 2] [--seeds none,1]
                         [--shifts=0,-2]

Boots the kernel BOOTS times per seed setting ("none": QEMU's default,
RDRAND from the host; a number: QEMU's -seed N, so the guest's
RDRAND/RDSEED come from a PRNG seeded with N), always in virtual time
(icount) at each icount shift of --shifts (a negative one dilates time:
2^-shift instructions per ns, scripts/qemu.sh's QEMU), and runs
bench/vtprobe.sh in each: testbed/tools/vtprobe twice from the guest's
tmpfs, through a 100 Mbit/s bottleneck.  Every line the probe prints is
compared across the boots of one setting (shift and seed): equal, or the
largest relative difference.  Beside shift 0, the clock_gettime loop of a
dilated guest runs 2^-shift times as many iterations in its 50 ms while
the bottleneck's bytes stay the same.  Writes DIR/determinism.json and
DIR/determinism.md.
"""
import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from dcnet import ROOT

# what each probe line tells (bench/vtprobe.sh, testbed/tools/vtprobe.c)
MEANING = {
    "start_ns": "guest time at the probe's start (boot and setup)",
    "boot_id": "the kernel's RNG (boot_id)",
    "getrandom": "getrandom(2), 8 bytes",
    "loop_iters": "clock_gettime() loop, 50 ms",
    "lo_bytes": "one TCP flow over loopback, 100 ms",
    "lo_sport": "its ephemeral source port",
    "flow0_bytes": "flow 0 through the bottleneck, 1 s",
    "flow0_retrans": "its retransmissions",
    "flow1_bytes": "flow 1 through the bottleneck, 1 s",
    "flow1_retrans": "its retransmissions",
    "end_ns": "guest time at the probe's end",
    "tbf_sent_bytes": "bottleneck: bytes sent (both runs)",
    "tbf_dropped": "bottleneck: drops (both runs)",
}


def parse(log):
    """guest.log -> {"run1": {key: value}, "run2": ..., "counters": ...}"""
    out, cur = {}, None
    for line in log.splitlines():
        if line.startswith("== "):
            cur = line[3:].replace(" ", "")
            out[cur] = {}
        elif cur and " " in line and not line.startswith("vmrun"):
            k, v = line.split(" ", 1)
            out[cur][k] = v.strip()
    return out


def spread(values):
    """'equal', or the largest relative difference to the smallest value"""
    if len(set(values)) == 1:
        return "equal"
    try:
        nums = [int(v) for v in values]
    except ValueError:
        return "differs"
    lo, hi = min(nums), max(nums)
    return f"{(hi - lo) / lo * 100:.2f}%" if lo else "differs"


def boot(kernel, out, seed, timeout, cpus, shift=0):
    env = dict(os.environ, DCNET_KUNIT="")
    env.pop("DCNET_VM_SEED", None)
    if seed != "none":
        env["DCNET_VM_SEED"] = seed
    cmd = [sys.executable, "-m", "dcnet.host.vmrun", "--kernel", kernel, "--out", out,
           "--clock", "virtual", f"--shift={shift}", "--timeout", str(timeout), "--cpus", str(cpus),
           "--", "sh", "bench/vtprobe.sh"]
    rc = subprocess.run(cmd, env=env, cwd=ROOT).returncode
    try:
        with open(os.path.join(out, "vm.json")) as f:
            wall = json.load(f).get("wall_s")
    except (OSError, ValueError):
        wall = None
    with open(os.path.join(out, "guest.log")) as f:
        return rc, parse(f.read()), wall


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--boots", type=int, default=2)
    ap.add_argument("--seeds", default="none,1", help="comma-separated: none or a number per setting")
    ap.add_argument("--shifts", default="0", help="comma-separated icount shifts, -10..10")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cpus", type=int, default=1, help="the guest's vCPUs (vmrun's default in virtual time: 1)")
    ap.add_argument("--timeout", type=int, default=1200)
    a = ap.parse_args(argv)
    subprocess.run(["make", "-s", "-C", os.path.join(ROOT, "testbed", "tools")], check=True)
    shifts = [int(x) for x in a.shifts.split(",")]
    if any(x < 0 for x in shifts):
        # build the dilating QEMU once, before the boots ask for it together
        subprocess.run([os.path.join(ROOT, "scripts", "qemu.sh")], check=True)
    # a setting: (shift, seed); its directory keeps the old name at shift 0
    settings = [(sh, s) for sh in shifts for s in a.seeds.split(",")]

    def name(st):
        return f"seed-{st[1]}" if st[0] == 0 else f"shift{st[0]}-seed-{st[1]}"
    jobs = [(st, b) for st in settings for b in range(1, a.boots + 1)]
    with ThreadPoolExecutor(a.jobs) as ex:
        res = list(ex.map(lambda j: boot(os.path.abspath(a.kernel), os.path.join(a.out, name(j[0]), f"boot{j[1]}"),
                                         j[0][1], a.timeout, a.cpus, j[0][0]), jobs))
    failed = [(name(j[0]), j[1]) for j, r in zip(jobs, res) if r[0] != 0]
    seeds = [name(st) for st in settings]
    table = {}
    for st in settings:
        s = name(st)
        boots = [r[1] for j, r in zip(jobs, res) if j[0] == st]
        table[s] = {}
        for sec in ("run1", "run2", "counters"):
            for k in boots[0].get(sec, {}):
                vals = [b.get(sec, {}).get(k, "?") for b in boots]
                table[s][f"{sec}.{k}"] = {"values": vals, "spread": spread(vals)}
    with open(os.path.join(a.out, "determinism.json"), "w") as f:
        json.dump({"boots": a.boots, "cpus": a.cpus, "shifts": shifts, "seeds": a.seeds.split(","),
                   "settings": seeds, "failed": failed, "table": table,
                   "wall_s": {name(st): [r[2] for j, r in zip(jobs, res) if j[0] == st] for st in settings}},
                  f, indent=1)
    md = ["# Determinism of the virtual-time guest (bench/determinism.py)", "",
          f"{a.boots} boots per setting, {a.cpus} vCPUs, virtual time (icount shift "
          f"{', '.join(map(str, shifts))}; sleep=off), kernel `{a.kernel}`.",
          "A setting's boots run the same command; each cell is the values of its boots, then",
          "`equal` or the largest relative difference.", ""]
    keys = list(table[seeds[0]])
    md.append("| probe line | what it shows | " + " | ".join(
        f"shift {st[0]}, QEMU seed {st[1]}" for st in settings) + " |")
    md.append("|---|---|" + "---|" * len(seeds))
    for k in keys:
        cells = []
        for s in seeds:
            c = table[s].get(k)
            cells.append(f"{' / '.join(c['values'])} (**{c['spread']}**)" if c else "")
        md.append(f"| {k} | {MEANING.get(k.split('.', 1)[1], '')} | " + " | ".join(cells) + " |")
    md += ["", "Wall time per boot (s): " + "; ".join(
        f"shift {st[0]}, seed {st[1]}: " + " / ".join(
            "?" if r[2] is None else f"{r[2]:.0f}" for j, r in zip(jobs, res) if j[0] == st)
        for st in settings)]
    if failed:
        md += ["", f"Failed boots: {failed}"]
    with open(os.path.join(a.out, "determinism.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
