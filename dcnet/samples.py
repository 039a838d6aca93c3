"""Samples: one measurement booted N times with different seeds, reported
as the median and range of every headline figure.

A boot in virtual time is repeatable to the byte (--repeat shows it), so
one boot is one sample of the experiment, not a measurement of it.
`--samples N` boots N times; sample i (0-based) runs with QEMU seed
SEED + i (the guest's RDRAND, hence TCP's initial sequence numbers,
ports, hash secrets, ...) and every workload and multipath-hash seed
offset by STRIDE * i.  Sample 0 is the run without --samples: its seeds
are the committed ones, so its figures are the committed figures.

Guest side: seed(base) is the seed a bench or the testbed uses in place
of base.  Host side: env(i) is what a boot of sample i gets, and
finish() writes samples.json and the report's "Samples" section.
"""
import json
import math
import os
import shutil

from dcnet import config
from dcnet.figures import MIN_FCT_FLOWS, flatten, is_headline

# workload seeds of sample i: base + STRIDE * i (a prime, so that sample
# i's seed of one worker does not come back as sample j's of another
# for the handful of workers a bench derives from one base)
STRIDE = 1009
QEMU_SEED = 1           # the sealed guest's -seed of sample 0 (host/sealed.py SEED)


def index():
    """the sample this guest runs (0 without --samples)"""
    return config.get("DCNET_SAMPLE")


def seed(base):
    """the seed to use for base in this sample"""
    return int(base) + STRIDE * index()


def env(i):
    """the environment of a boot of sample i (0-based); sample 0 adds
    nothing, so that its boot is the plain run's, byte for byte"""
    if i == 0:
        return {}
    return {"DCNET_SAMPLE": str(i), "DCNET_VM_SEED": str(QEMU_SEED + i)}


def dirs(out, n):
    """out/sample1 .. out/sampleN, made and cleared of an earlier run's
    raw.json"""
    outs = [os.path.join(out, f"sample{i + 1}") for i in range(n)]
    for o in outs:
        os.makedirs(o, exist_ok=True)
        if os.path.exists(os.path.join(o, "raw.json")):
            os.unlink(os.path.join(o, "raw.json"))
    return outs


def median(vals):
    v = sorted(vals)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def summarise(results, ignore=()):
    """every numeric figure of the samples' results: dict(figure, values,
    median, lo, hi); a figure absent from some sample has median None"""
    flats = [flatten(r) for r in results]
    rows = []
    for k in sorted(set().union(*flats)):
        if any(s in k for s in ignore):
            continue
        vals = [f.get(k) for f in flats]
        have = [v for v in vals if v is not None and math.isfinite(v)]
        if len(have) < len(vals):
            rows.append(dict(figure=k, values=vals, median=None, lo=None, hi=None))
            continue
        rows.append(dict(figure=k, values=vals, median=median(have), lo=min(have), hi=max(have)))
    return rows


def goal_verdicts(results):
    """The goals a bench's results carry (results["goals"]: dicts with key,
    goal, status), decided over the samples: 'met' only where every sample
    met it, 'not met' where none did, else 'undecided (k of N met)'."""
    by = {}
    order = []
    for r in results:
        for g in (r.get("goals") or []) if isinstance(r, dict) else []:
            k = g.get("key") or g.get("goal")
            if k not in by:
                by[k] = dict(key=k, goal=g.get("goal", k), statuses=[])
                order.append(k)
            by[k]["statuses"].append(g.get("status"))
    out = []
    for k in order:
        st = by[k]["statuses"]
        n = len(results)
        met = sum(1 for s in st if s == "met")
        measured = sum(1 for s in st if s in ("met", "not met"))
        if measured < n:
            verdict = f"not measured in {n - measured} of {n} samples"
        elif met == n:
            verdict = "met"
        elif met == 0:
            verdict = "not met"
        else:
            verdict = f"undecided ({met} of {n} met)"
        out.append(dict(key=k, goal=by[k]["goal"], statuses=st, verdict=verdict))
    return out


def fmt(x):
    return "-" if x is None else f"{x:.4g}"


def markdown(rows, goals, n, flat, limit=40):
    """the report's Samples section: goals over the samples, then every
    headline figure's median and range"""
    head = [r for r in rows if r["median"] is not None and is_headline(r["figure"], flat)]
    missing = [r for r in rows if r["median"] is None]
    L = ["## Samples", "",
         f"{n} samples: boot i runs with QEMU seed {QEMU_SEED}+i and every workload and "
         f"multipath-hash seed + {STRIDE}i (sample 1 is the run with the seeds above). "
         f"Each figure as the median and the range over the samples; a goal is met only "
         f"where every sample meets it.", ""]
    if goals:
        L += ["| goal | verdict | per sample |", "|---|---|---|"]
        for g in goals:
            L.append(f"| {g['goal']} | **{g['verdict']}** | {', '.join(str(s) for s in g['statuses'])} |")
        L.append("")
    if head:
        L += [f"Headline figures (throughputs, saturation, missed-deadline fractions, FCT "
              f"percentiles over >= {MIN_FCT_FLOWS} flows): {len(head)}.", "",
              "| figure | median | range | " + " | ".join(f"s{i + 1}" for i in range(n)) + " |",
              "|---|---|---|" + "---|" * n]
        for r in head[:limit]:
            L.append(f"| `{r['figure']}` | {fmt(r['median'])} | {fmt(r['lo'])} - {fmt(r['hi'])} | "
                     + " | ".join(fmt(v) for v in r["values"]) + " |")
        if len(head) > limit:
            L.append(f"| ({len(head) - limit} more in samples.json) |" + " |" * (n + 2))
    if missing:
        L += ["", f"{len(missing)} figures appear in only some samples (samples.json lists them)."]
    return L


def finish(out, results, walls, name, ignore=()):
    """After n samples in out/sample1..: samples.json, sample 1's report
    and plots in out/ with the Samples section appended, one line on
    stdout.  Returns the goal verdicts."""
    n = len(results)
    rows = summarise(results, ignore)
    goals = goal_verdicts(results)
    with open(os.path.join(out, "samples.json"), "w") as f:
        json.dump(dict(samples=n, stride=STRIDE, qemu_seed=QEMU_SEED, wall_s=walls, goals=goals,
                       figures=rows), f, indent=1)
    for fn in os.listdir(os.path.join(out, "sample1")):
        if fn.endswith((".png", ".md")):
            shutil.copy(os.path.join(out, "sample1", fn), os.path.join(out, fn))
    with open(os.path.join(out, "report.md"), "a") as f:
        f.write("\n" + "\n".join(markdown(rows, goals, n, flatten(results[0]))) + "\n\n"
                + "Each sample's own report: " + ", ".join(f"[sample {i + 1}](sample{i + 1}/report.md)"
                                                           for i in range(n)) + ".\n")
    print(f"{name}: {n} samples; goals: "
          + (", ".join(f"{g['key']} {g['verdict']}" for g in goals) if goals else "none in the results"))
    return goals
