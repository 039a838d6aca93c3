"""Tables of docs/testbed.md and docs/architecture.md.

testbed-default: `make testbed`'s default suite (docs/results/testbed-default/)
against Presto's Fig. 15. architecture-determinism: what repeats across boots
(docs/results/determinism/ and the default suite's repeat.json).
"""

from dcnet.doctables import load_json, md_table, table

TESTBED = "testbed-default"
DETERMINISM = "determinism"

# Presto (He et al., SIGCOMM 2015), Sec. 6 "Synthetic Workloads", Fig. 15: in
# the non-shuffle workloads Presto's elephant throughput is 38-72% above
# ECMP's and 17-28% above MPTCP's, and within 1-4% of Optimal. Presto itself
# is not in the default suite (bench-presto measures it), so the gap to
# compare is Optimal's over the baseline.
PAPER_GAP = {"ecmp": (38.0, 72.0), "mptcp": (17.0, 28.0)}
PAPER_SCHEME = {"ecmp": "ECMP", "mptcp": "MPTCP (8 subflows)", "optimal": "Optimal"}
# 1500-byte frames carry 1448 bytes of TCP payload (timestamps on): the most
# goodput a link gives iperf3.
GOODPUT_OF_LINK = 1448.0 / (1500 + 14)


def _runs():
    res = load_json(TESTBED, "run1", "results.json")
    return res, {(r["scheme"], r["workload"]): r for r in res["runs"]}


def _scale(meta):
    exp = meta["experiment"]
    topo = exp["topology"]
    hosts = topo["leaves"] * topo["hosts_per_leaf"]
    return "%d hosts, %dx%d Clos, %g Mbit/s links (%g of %g Gbit/s), %g s" % (
        hosts, topo["leaves"], topo["spines"], meta["link_mbit"], meta["scale"],
        meta["paper_link_mbit"] / 1000, exp["duration_s"])


def _gap(runs, scheme, workload):
    opt = runs[("optimal", workload)]["elephant_mean_bps"]
    other = runs[(scheme, workload)]["elephant_mean_bps"]
    return 100.0 * (opt / other - 1), opt / 1e6, other / 1e6


def _verdict(scheme, gap):
    lo, hi = PAPER_GAP[scheme]
    name = PAPER_SCHEME[scheme].split(" ")[0]
    if lo <= gap <= hi:
        return "reproduces"
    if gap > hi:
        return "%s further below Optimal than in the paper" % name
    return "%s closer to Optimal than in the paper" % name


def _repeat():
    rep = load_json(TESTBED, "repeat.json")
    figs = rep["figures"]
    return rep["runs"], len(figs), 100.0 * max(f["spread"] for f in figs)


def _default_rows():
    res, runs = _runs()
    scale = _scale(res["meta"])
    link = "[testbed-default](results/testbed-default/)"
    rows = []
    for wl in ("stride", "bijection"):
        r = runs[("optimal", wl)]
        rows.append(("Fig. 15, %s: Optimal (one non-blocking switch)" % wl,
                     "the reference",
                     "%.2f Mbit/s per elephant, %.0f%% of the link, %.1f%% of TCP goodput" % (
                         r["elephant_mean_bps"] / 1e6, 100 * r["elephant_mean_of_link"],
                         100 * r["elephant_mean_of_link"] / GOODPUT_OF_LINK),
                     scale, "-", link))
    for scheme in ("ecmp", "mptcp"):
        lo, hi = PAPER_GAP[scheme]
        for wl in ("stride", "bijection"):
            gap, opt, other = _gap(runs, scheme, wl)
            rows.append(("Fig. 15, %s: %s" % (wl, PAPER_SCHEME[scheme]),
                         "Presto (within 1-4%% of Optimal) %g-%g%% above %s" % (
                             lo, hi, PAPER_SCHEME[scheme].split(" ")[0]),
                         "Optimal %.0f%% above %s (%.2f against %.2f Mbit/s)" % (
                             gap, PAPER_SCHEME[scheme].split(" ")[0], opt, other),
                         scale, _verdict(scheme, gap), link))
    boots, nfig, spread = _repeat()
    rows.append(("repeatability", "-",
                 "%d boots: %d figures, largest spread %.2f%%" % (boots, nfig, spread),
                 "same seeds, virtual time", "repeats exactly" if spread == 0 else
                 "repeats within %.2f%%" % spread, link))
    return rows


@table("testbed-default")
def testbed_default():
    return md_table(("paper figure", "paper", "ours", "scale", "verdict", "data"),
                    _default_rows())


def summary_rows():
    """(claim, paper, ours, scale, verdict, link) for the README."""
    res, runs = _runs()
    scale = _scale(res["meta"])
    link = "docs/results/testbed-default/"
    rows = []
    for scheme in ("ecmp", "mptcp"):
        lo, hi = PAPER_GAP[scheme]
        gaps = [_gap(runs, scheme, wl)[0] for wl in ("stride", "bijection")]
        name = PAPER_SCHEME[scheme].split(" ")[0]
        verdicts = ["%s: %s" % (wl, _verdict(scheme, g))
                    for wl, g in zip(("stride", "bijection"), gaps)]
        if len(set(_verdict(scheme, g) for g in gaps)) == 1:
            verdicts = [_verdict(scheme, gaps[0])]
        rows.append(("Testbed: %s against Optimal, stride / bijection (Presto Fig. 15)" % name,
                     "Presto %g-%g%% above %s" % (lo, hi, name),
                     "Optimal %.0f%% / %.0f%% above %s" % (gaps[0], gaps[1], name),
                     scale, "; ".join(verdicts), link))
    boots, nfig, spread = _repeat()
    rows.append(("Determinism: `make testbed REPEAT=2`", "-",
                 "%d figures, largest spread %.2f%% over %d boots" % (nfig, spread, boots),
                 "sealed guest, virtual time, record mode",
                 "repeats exactly" if spread == 0 else "within %.2f%%" % spread, link))
    return rows


# --- docs/architecture.md -------------------------------------------------

def _numeric_spreads(tab):
    out = []
    for v in tab.values():
        s = v["spread"]
        if s.endswith("%"):
            out.append(float(s[:-1]))
    return out


def _probe_row(setup, sub, seed):
    d = load_json(DETERMINISM, *(sub + ["determinism.json"]))
    tab = d["table"][seed]
    equal = sum(1 for v in tab.values() if v["spread"] == "equal")
    spreads = _numeric_spreads(tab)
    loop = [v["spread"] for k, v in tab.items() if k.endswith("loop_iters")]
    res = "%d of %d probe lines equal" % (equal, len(tab))
    if spreads:
        res += "; the others up to %.0f%% apart" % max(spreads)
    res += "; CPU loop: %s" % " / ".join(loop)
    path = "results/" + "/".join([DETERMINISM] + sub) + "/"
    return (setup, str(d["boots"]), res, "[%s](%s)" % (path.split("results/")[1].rstrip("/"), path))


def _seeds_row():
    d = load_json(DETERMINISM, "seeds", "determinism.json")
    a, b = d["seeds"][:2]
    ta, tb = d["table"][a], d["table"][b]
    same = all(v["spread"] == "equal" for t in (ta, tb) for v in t.values())
    net = [k for k in ta if "bytes" in k or "retrans" in k or "sport" in k]
    diff = sum(1 for k in net if ta[k]["values"][0] != tb[k]["values"][0])
    return ("sealed, QEMU seed %s against seed %s" % (b, a), "%d per seed" % d["boots"],
            "each seed's boots %s; %d of %d network lines differ between the seeds" % (
                "equal on every line" if same else "differ", diff, len(net)),
            "[determinism/seeds](results/determinism/seeds/)")


def _devices_rows():
    d = load_json(DETERMINISM, "devices.json")
    rows = []
    for key in ("virtfs", "second-serial", "console-only"):
        s = d["settings"][key]
        boots = s["boots"]
        first = boots[0]["output_hash"]
        agree = sum(1 for b in boots if b["output_hash"] == first)
        rows.append(("sealed, with %s" % s["machine"], str(len(boots)),
                     "%d of %d boots print the first boot's output" % (agree, len(boots)),
                     "[determinism/devices.json](results/determinism/devices.json)"))
    return rows


def _loops_row():
    d = load_json(DETERMINISM, "parallel-loops.json")
    one = [sum(r["iterations_per_thread"]) for r in d["runs"] if r["threads"] == 1]
    two = [sum(r["iterations_per_thread"]) for r in d["runs"] if r["threads"] == 2]
    return ("%d vCPUs, a CPU loop on 1 and on 2 threads (200 ms of guest time)" % d["cpus"], "1",
            "1 thread: %s; 2 threads together: %s iterations" % (
                " / ".join("%.2f M" % (x / 1e6) for x in one),
                " / ".join("%.2f M" % (x / 1e6) for x in two)),
            "[determinism/parallel-loops.json](results/determinism/parallel-loops.json)")


@table("architecture-determinism")
def architecture_determinism():
    boots, nfig, spread = _repeat()
    rows = [_probe_row("sealed, one vCPU, QEMU seed 1 (release kernel)", [], "1"),
            _seeds_row()]
    rows += _devices_rows()
    rows += [_probe_row("9p root (virtme-ng), one vCPU, seed 1 (debug kernel)", ["9p-one-vcpu"], "1"),
             _probe_row("9p root (virtme-ng), two vCPUs, seed 1 (debug kernel)", ["9p-two-vcpus"], "1"),
             _loops_row(),
             ("`make testbed REPEAT=2`: sealed, record mode, default suite", str(boots),
              "%d figures, largest spread %.2f%%" % (nfig, spread),
              "[testbed-default](results/testbed-default/)")]
    return md_table(("guest", "boots", "result", "data"), rows)


# --- docs/architecture.md: where things live ----------------------------------

import os as _os
import re as _re

from dcnet.doctables import ROOT as _ROOT


def _series():
    with open(_os.path.join(_ROOT, "kernel-patches", "series")) as f:
        return [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]


def _subject(patch):
    with open(_os.path.join(_ROOT, "kernel-patches", patch)) as f:
        lines = f.read().split("\n")
    for i, ln in enumerate(lines):
        if ln.startswith("Subject:"):
            subj = ln[len("Subject:"):].strip()
            j = i + 1
            while j < len(lines) and lines[j].startswith(" "):
                subj += " " + lines[j].strip()
                j += 1
            return _re.sub(r"^\[PATCH[^\]]*\]\s*", "", subj)
    return ""


def _new_files():
    out = {}
    with open(_os.path.join(_ROOT, "kernel-patches", "new-files")) as f:
        for ln in f:
            if ln.startswith("#") or not ln.strip():
                continue
            parts = ln.split()
            out.setdefault(parts[0], []).append(parts[2] if len(parts) > 2 else parts[1])
    return out


def _kconfig():
    opts = []
    with open(_os.path.join(_ROOT, "Kconfig")) as f:
        cur = None
        for ln in f:
            m = _re.match(r"(?:menu)?config (\w+)", ln)
            if m:
                cur = {"name": m.group(1), "type": "", "prompt": "", "depends": []}
                opts.append(cur)
                continue
            if cur is None:
                continue
            m = _re.match(r"\s+(bool|tristate)\s+\"([^\"]*)\"", ln)
            if m and not cur["type"]:
                cur["type"], cur["prompt"] = m.group(1), m.group(2)
            m = _re.match(r"\s+depends on (.*)", ln)
            if m:
                cur["depends"].append(m.group(1).strip())
    return opts


@table("architecture-patches")
def architecture_patches():
    nf = _new_files()
    rows = []
    for p in _series():
        files = nf.get(p, [])
        rows.append(("`%s`" % p[:4], _subject(p),
                     ", ".join("`%s`" % x for x in files) or "-"))
    return md_table(("patch", "subject", "new files it carries (`kernel-patches/new-files`)"), rows)


@table("architecture-kconfig")
def architecture_kconfig():
    def dep(ds):
        ds = ["(%s)" % d if "||" in d and len(ds) > 1 else d for d in ds]
        return " && ".join(ds).replace("|", "\\|") or "-"
    rows = [("`CONFIG_%s`" % o["name"], o["type"], o["prompt"], dep(o["depends"]))
            for o in _kconfig()]
    return md_table(("option (%d in `Kconfig`)" % len(rows), "type", "prompt", "depends on"), rows)


# --- docs/architecture.md: dilated time ----------------------------------------

def _ints(tab, key):
    return [int(v) for v in tab[key]["values"]]


@table("architecture-dilation")
def architecture_dilation():
    """bench/determinism.py --shifts: per shift, whether the boots agree,
    the CPU loop against shift 0's, the guest's boot time, the bottleneck's
    bytes and the wall time per boot (docs/results/determinism/dilated/)."""
    d = load_json(DETERMINISM, "dilated", "determinism.json")
    seed = d["seeds"][0]

    def name(shift):
        return "seed-%s" % seed if shift == 0 else "shift%d-seed-%s" % (shift, seed)
    base = d["table"][name(0)] if 0 in d["shifts"] else None
    rows = []
    for sh in d["shifts"]:
        tab = d["table"][name(sh)]
        equal = sum(1 for v in tab.values() if v["spread"] == "equal")
        loop = _ints(tab, "run1.loop_iters")[0]
        ratio = " (%.2fx shift 0)" % (loop / _ints(base, "run1.loop_iters")[0]) if base and sh != 0 else ""
        sent = _ints(tab, "counters.tbf_sent_bytes")[0]
        wall = [w for w in d.get("wall_s", {}).get(name(sh), []) if w is not None]
        rows.append(("%d" % sh, "%g" % (2.0 ** -sh), "%d" % len(tab[next(iter(tab))]["values"]),
                     "%d of %d" % (equal, len(tab)),
                     "%.2f M%s" % (loop / 1e6, ratio),
                     "%.1f s" % (_ints(tab, "run1.start_ns")[0] / 1e9),
                     "%.1f MB" % (sent / 1e6),
                     " / ".join("%.0f s" % w for w in wall) or "?"))
    return md_table(("shift", "instructions per ns", "boots", "probe lines equal across boots",
                     "CPU loop, 50 ms", "guest time to the probe",
                     "through the 100 Mbit/s bottleneck (2 flows for 1 s, twice)",
                     "wall time per boot"), rows) + \
        "\nData: [determinism/dilated](results/determinism/dilated/) (release kernel, QEMU seed %s).\n" % seed
