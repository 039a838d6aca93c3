"""Per cell of a diagnostic run (raw.json or raw.json.xz): the slow
queries' late flows (ending > 15 ms after the query's median flow end),
the hosts' RTOs, and the aggregator's delayed-ACK timer firings."""
import json, lzma, statistics, sys

for path in sys.argv[1:]:
    op = lzma.open if path.endswith(".xz") else open
    with op(path, "rt") as f:
        d = json.load(f)
    print(path)
    for ci, c in enumerate(d["incast"]):
        recs = c["recs"]
        qs = [r for r in recs if r.get("type") == "query"]
        late = []
        for q in qs:
            fl = [r for r in recs if r.get("type") == "flow" and r["query"] == q["query"]]
            med = statistics.median(r["end_us"] for r in fl)
            for r in fl:
                if r["end_us"] - med > 15000:
                    w = "w%d" % (int(r["peer"].split(".")[2]) - 2)
                    late.append((q["query"], w, round((r["end_us"] - q["start_us"]) / 1000, 1),
                                 round((r["end_us"] - med) / 1000, 1), c["per_host"][w].get("TCPTimeouts", 0)))
        ph = c["per_host"]
        print(f"  cell {ci} quickack {int(c['quickack'])}: query p50/max "
              f"{statistics.median(c['queries']) / 1000:.1f}/{max(c['queries']) / 1000:.1f} ms, "
              f"q0 {c['queries'][0] / 1000:.1f} ms; RTOs {c['netstat']['TCPTimeouts']}; "
              f"agg DelayedACKs {ph['agg'].get('DelayedACKs', 0)}; "
              f"nf_cap_drops {c['ports']['agg']['nf_cap_drops']}; drops {c['ports']['agg']['drops']}; "
              f"loss probes {c['netstat']['TCPLossProbes']}; undos {c['netstat']['TCPPartialUndo']}/{c['netstat']['TCPFullUndo']}")
        for q, w, end, over, rto in late:
            print(f"      late flow: query {q} {w} ends {end} ms, {over} ms after the median flow; its host's RTOs in the cell {rto}")
