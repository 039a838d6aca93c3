#!/usr/bin/env python3
"""Turn one or more physical-testbed runs into the project's raw.json.

    collect.py RUN_DIR [RUN_DIR ...] [--out FILE] [--report] [--report-dir DIR] [--report-args ARGS]

A RUN_DIR is what site.yml's gather play leaves on the controller,
{{ dcnet_results }}/<run>/:

    experiment.json            the variables of the run
    flows.json                 its flow list (testbed/workloads.py)
    <host>.tgz                 a host's files as fetched; unpacked here into <host>/:
    <host>/flow-ID-SRC-DST.json  iperf3 -J --get-server-output of each flow it sent
    <host>/flow-ID-SRC-DST.rc    iperf3's exit status
    <host>/sized.json, .rc, .err   `dltraffic sched` of its sized flows: a JSON
                               record per flow (id, bytes, fct_us)
    <host>/cpu-before.txt, cpu-after.txt   first line of /proc/stat
    <host>/tc-{qdisc,class}-{before,after}.json   tc -s -j ... show dev DEV
    <host>/uname.txt, started.txt, sysctl.txt
    <host>/presto-gro-{config,before,after}.json   `dcnet-presto-gro show DEV`
                               where the presto role ran (meta.host_info.HOST.presto_gro)

Each RUN_DIR becomes one entry of "runs" (the first one gives "meta"), so
several runs (e.g. ecmp and mptcp) can be compared in one report.  The
output goes to RUN_DIR/raw.json unless --out is given; --report then runs
testbed/report.py raw.json --out DIR (DIR: report/ next to raw.json) when
that file exists.

Exit status: 0; 1 when a flow has no usable iperf3 or dltraffic result (raw.json is
still written, the flow with bytes 0 and an "error"); 3 when report.py fails.
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# tc -s -j counters that count ECN marks (qdisc xstats and the HTB ECN
# patch's class xstats, docs/htb-ecn.md)
MARK_KEYS = ("ecn_mark", "ce_mark", "marked", "ecn_ce_marked", "ecn_ece_marked")


def load_json(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def read_text(path, default=""):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def cpu_busy(before, after):
    """Busy fraction of all CPUs between two 'cpu ...' lines of /proc/stat."""
    try:
        b = [int(x) for x in before.split()[1:9]]
        a = [int(x) for x in after.split()[1:9]]
    except (ValueError, AttributeError):
        return None
    if len(a) < 5 or len(b) < 5:
        return None
    d = [x - y for x, y in zip(a, b)]
    total = sum(d)
    if total <= 0:
        return None
    idle = d[3] + d[4]          # idle + iowait
    return round(max(0.0, min(1.0, 1.0 - idle / total)), 4)


def _stat(entry, key):
    v = entry.get(key)
    if v is None:
        for sub in ("xstats", "options"):
            if isinstance(entry.get(sub), dict) and isinstance(entry[sub].get(key), (int, float)):
                return entry[sub][key]
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def _marks(entries):
    return sum(_stat(e, k) for e in entries or [] for k in MARK_KEYS)


def _ident(e):
    return (e.get("kind"), e.get("handle"), e.get("parent"), e.get("class"))


def port_record(node, dev, qd_before, qd_after, cl_before, cl_after):
    """Counters of the root qdisc of dev over the run (after - before)."""
    qd_before, qd_after = qd_before or [], qd_after or []
    root_a = next((q for q in qd_after if q.get("root")), qd_after[0] if qd_after else {})
    root_b = next((q for q in qd_before if _ident(q) == _ident(root_a)), None)

    def delta(key):
        a = _stat(root_a, key)
        if root_b is None:
            return a
        return max(0, a - _stat(root_b, key))

    same = {_ident(q) for q in qd_before} == {_ident(q) for q in qd_after}
    marks_a = _marks(qd_after) + _marks(cl_after)
    marks_b = _marks(qd_before) + _marks(cl_before) if same else 0
    return {"node": node, "dev": dev, "kind": root_a.get("kind") or "unknown",
            "sent_bytes": delta("bytes"), "sent_packets": delta("packets"),
            "drops": delta("drops"), "marks": max(0, marks_a - marks_b),
            "overlimits": delta("overlimits")}


def sized_results(hostdir):
    """a sender's `dltraffic sched` records (sized.json), by flow id"""
    out = {}
    try:
        with open(os.path.join(hostdir, "sized.json")) as f:
            lines = f.read().splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if isinstance(j, dict) and j.get("type") == "flow" and "id" in j:
            out[str(j["id"])] = j
    return out


def sized_record(flow, hostdir, results):
    """a sized flow: bytes and completion time from dltraffic"""
    rec = {"id": flow["id"], "src": flow["src"], "dst": flow["dst"],
           "kind": flow.get("kind"), "bytes": 0, "duration_s": 0.0, "tput_bps": 0.0,
           "fct_us": None, "intervals_bps": [],
           "deadline_us": flow.get("deadline_us"), "met_deadline": None}
    res = results.get(str(flow["id"]))
    if not res or res.get("fct_us") is None:
        rc = read_text(os.path.join(hostdir, "sized.rc"), "?")
        err = read_text(os.path.join(hostdir, "sized.err"))[-300:]
        rec["error"] = (f"dltraffic sched (exit {rc}): " +
                        (str(res.get("error")) if res else "no record") + f" {err}").strip()
        return rec
    rec["bytes"] = int(res.get("bytes", 0))
    rec["fct_us"] = float(res["fct_us"])
    rec["duration_s"] = rec["fct_us"] / 1e6
    rec["tput_bps"] = rec["bytes"] * 8 / max(rec["duration_s"], 1e-6)
    if flow.get("deadline_us"):
        rec["met_deadline"] = rec["fct_us"] <= flow["deadline_us"]
    return rec


def flow_record(flow, hostdir, sized=None):
    if flow.get("bytes"):
        return sized_record(flow, hostdir, sized if sized is not None else sized_results(hostdir))
    name = f"flow-{flow['id']}-{flow['src']}-{flow['dst']}"
    rec = {"id": flow["id"], "src": flow["src"], "dst": flow["dst"],
           "kind": flow.get("kind"), "bytes": 0,
           "duration_s": float(flow.get("duration_s") or 0), "tput_bps": 0.0,
           "fct_us": None, "intervals_bps": [],
           "deadline_us": flow.get("deadline_us"), "met_deadline": None}
    j = load_json(os.path.join(hostdir, name + ".json"))
    rc = read_text(os.path.join(hostdir, name + ".rc"), "?")
    if not isinstance(j, dict):
        err = read_text(os.path.join(hostdir, name + ".err"))[-300:]
        rec["error"] = f"no iperf3 JSON (exit {rc}) {err}".strip()
        return rec
    if j.get("error"):
        rec["error"] = f"iperf3 (exit {rc}): {j['error']}"
    recv = (j.get("end") or {}).get("sum_received") or {}
    if recv:
        rec["bytes"] = int(recv.get("bytes", 0))
        rec["duration_s"] = round(float(recv.get("seconds", rec["duration_s"])), 6)
        rec["tput_bps"] = float(recv.get("bits_per_second", 0.0))
    elif "error" not in rec:
        rec["error"] = f"iperf3 (exit {rc}): no end.sum_received"
    # the receiver's intervals (what arrived), else the sender's
    server = j.get("server_output_json") or {}
    ivs = server.get("intervals") or j.get("intervals") or []
    rec["intervals_bps"] = [float(iv["sum"]["bits_per_second"]) for iv in ivs
                            if isinstance(iv.get("sum"), dict)]
    return rec


def parse_packages(text):
    """dpkg-query's "PACKAGE VERSION" lines -> {package: version}"""
    out = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 2:
            out[parts[0]] = parts[1]
    return out


def parse_sysctl(text):
    out = {}
    for line in text.splitlines():
        if " = " in line:
            k, v = line.split(" = ", 1)
            out[k.strip()] = v.strip()
    return out


def unpack(run_dir):
    """<host>.tgz (as fetched by the gather play) -> <host>/"""
    for name in sorted(os.listdir(run_dir)):
        if not name.endswith(".tgz"):
            continue
        dest = os.path.join(run_dir, name[:-4])
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(dest)
        with tarfile.open(os.path.join(run_dir, name)) as tar:
            for m in tar.getmembers():
                if not (m.isfile() or m.isdir()) or m.name.startswith("/") or ".." in m.name.split("/"):
                    raise SystemExit(f"collect: unexpected member {m.name!r} in {name}")
            tar.extractall(dest)
        os.unlink(os.path.join(run_dir, name))


# Presto GRO's counters (dcnet/prestogro.py STATS) that count events; the
# others (ewma_us, flows, held_bytes) are levels, reported as after
PRESTO_GRO_LEVELS = ("ewma_us", "flows", "held_bytes")


def presto_gro_record(config, before, after):
    """a host's Presto GRO (presto-gro-{config,before,after}.json, the
    output of `dcnet-presto-gro show DEV`): its settings, and its counters
    over the run (after - before; levels as after).  None when the presto
    role did not run on the host."""
    if not isinstance(config, dict) and not isinstance(after, dict):
        return None
    cfg = config if isinstance(config, dict) else after
    rec = {"dev": cfg.get("ifname"),
           "settings": {k: v for k, v in cfg.items() if k not in ("stats", "ifindex", "ifname")}}
    a = (after or {}).get("stats") or {}
    b = (before or {}).get("stats") or {}
    rec["counters"] = {k: (v if k in PRESTO_GRO_LEVELS else v - b.get(k, 0)) for k, v in a.items()} or None
    return rec


def collect_run(run_dir):
    unpack(run_dir)
    exp = load_json(os.path.join(run_dir, "experiment.json"))
    if not isinstance(exp, dict):
        sys.exit(f"collect: no experiment.json in {run_dir}")
    flow_list = load_json(os.path.join(run_dir, "flows.json"), exp.get("flows", []))
    hosts = exp.get("hosts") or sorted(d for d in os.listdir(run_dir)
                                        if os.path.isdir(os.path.join(run_dir, d)))
    dev = exp.get("dev", "eth0")
    sized = {h: sized_results(os.path.join(run_dir, h))
             for h in {f["src"] for f in flow_list if f.get("bytes")}}
    flows = [flow_record(f, os.path.join(run_dir, f["src"]), sized.get(f["src"])) for f in flow_list]
    ports, cpu, info = [], {}, {}
    for h in hosts:
        hd = os.path.join(run_dir, h)
        if not os.path.isdir(hd):
            continue
        ports.append(port_record(h, dev,
                                 load_json(os.path.join(hd, "tc-qdisc-before.json"), []),
                                 load_json(os.path.join(hd, "tc-qdisc-after.json"), []),
                                 load_json(os.path.join(hd, "tc-class-before.json"), []),
                                 load_json(os.path.join(hd, "tc-class-after.json"), [])))
        busy = cpu_busy(read_text(os.path.join(hd, "cpu-before.txt")),
                        read_text(os.path.join(hd, "cpu-after.txt")))
        if busy is not None:
            cpu[h] = busy
        info[h] = {"kernel": read_text(os.path.join(hd, "uname.txt")) or None,
                   "started": read_text(os.path.join(hd, "started.txt")) or None,
                   "sysctl": parse_sysctl(read_text(os.path.join(hd, "sysctl.txt"))),
                   "packages": parse_packages(read_text(os.path.join(hd, "packages.txt")))}
        pg = presto_gro_record(load_json(os.path.join(hd, "presto-gro-config.json")),
                               load_json(os.path.join(hd, "presto-gro-before.json")),
                               load_json(os.path.join(hd, "presto-gro-after.json")))
        if pg:
            info[h]["presto_gro"] = pg
    try:
        duration = float(exp.get("duration_s"))
    except (TypeError, ValueError):
        duration = max([f["duration_s"] or 0 for f in flows] or [0])
    run = {"scheme": str(exp.get("scheme")), "workload": str(exp.get("workload")),
           "duration_s": duration, "flows": flows, "ports": ports,
           "rtt_us": None, "cpu": cpu or None}
    return exp, hosts, info, run


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    ap.add_argument("--out", help="raw.json to write (default: FIRST_RUN_DIR/raw.json)")
    ap.add_argument("--report", action="store_true",
                    help="then run testbed/report.py raw.json --out DIR, if it exists")
    ap.add_argument("--report-dir", help="default: report/ next to raw.json")
    ap.add_argument("--report-args", default="", help="more arguments for report.py, e.g. --no-plots")
    a = ap.parse_args()

    runs, meta, bad = [], None, []
    for d in a.run_dirs:
        exp, hosts, info, run = collect_run(d)
        runs.append(run)
        bad += [f"{run['scheme']} flow {f['id']} {f['src']}->{f['dst']}: {f['error']}"
                for f in run["flows"] if f.get("error")]
        if meta is None:
            started = sorted(i["started"] for i in info.values() if i["started"])
            experiment = {k: v for k, v in exp.items() if k != "flows"}
            meta = {"platform": "physical",
                    "kernel": (info.get(hosts[0], {}).get("kernel") if hosts else None) or "unknown",
                    "hosts": hosts, "link_mbit": None, "paper_link_mbit": 10000,
                    "scale": None, "started": started[0] if started else "unknown",
                    "experiment": experiment,
                    "host_info": info}
    raw = {"meta": meta, "runs": runs}
    out = os.path.abspath(a.out or os.path.join(a.run_dirs[0], "raw.json"))
    with open(out + ".tmp", "w") as f:
        json.dump(raw, f, indent=1)
    os.replace(out + ".tmp", out)

    for run in runs:
        fl = run["flows"]
        agg = sum(f["tput_bps"] for f in fl)
        print(f"{run['scheme']} {run['workload']}: {len(fl)} flows, "
              f"{sum(1 for f in fl if f.get('error'))} failed, "
              f"{sum(1 for f in fl if f['tput_bps'] > 0)} with throughput, "
              f"aggregate {agg / 1e6:.1f} Mbit/s, cpu "
              + " ".join(f"{h}={v}" for h, v in (run["cpu"] or {}).items()))
    print(f"raw.json: {out}")
    for line in bad:
        print(f"FAILED: {line}")

    rc = 1 if bad else 0
    if a.report:
        report = os.path.join(ROOT, "testbed", "report.py")
        rdir = os.path.abspath(a.report_dir or os.path.join(os.path.dirname(out), "report"))
        if not os.path.exists(report):
            print("report: testbed/report.py does not exist yet; raw.json only")
        else:
            p = subprocess.run([sys.executable, report, out, "--out", rdir] + shlex.split(a.report_args),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for line in p.stdout.splitlines()[-10:]:
                print(f"report.py: {line}")
            if p.returncode != 0:
                print(f"report: testbed/report.py failed (exit {p.returncode})")
                rc = rc or 3
            else:
                print(f"report: {rdir}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
