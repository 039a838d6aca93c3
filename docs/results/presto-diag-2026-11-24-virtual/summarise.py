"""Summarise testbed raw.json files (or raw.json.xz): per run the elephants'
throughput, fabric drops and per-link bytes, TCP counters summed over
hosts, host NIC drops, flowcell and Presto GRO counters, the ss samples
and the largest queue backlogs.  python3 summarise.py r*/raw.json.xz"""
import json, lzma, sys, statistics as st
for path in sys.argv[1:]:
    raw = json.load(lzma.open(path) if path.endswith(".xz") else open(path))
    for r in raw["runs"]:
        tp = [f["tput_bps"]/1e6 for f in r["flows"] if f["tput_bps"] is not None and f["kind"]=="elephant"]
        print(f"== {path} {r['scheme']}/{r['workload']} mean {st.mean(tp):.2f} min {min(tp):.2f} max {max(tp):.2f} Mbit/s n={len(tp)} cpu={r.get('cpu')} seed={r.get('flowcell_seed')}")
        ports = r.get("ports") or []
        drops = sum(p["drops"] for p in ports)
        up = {f"{p['node']}>{p['dev']}": p["sent_bytes"]/1e6 for p in ports if p["node"].startswith("l") and p["dev"].startswith("s")}
        down = {f"{p['node']}>{p['dev']}": p["sent_bytes"]/1e6 for p in ports if p["node"].startswith("s")}
        pd = {f"{p['node']}>{p['dev']}": p["drops"] for p in ports if p["drops"]}
        print(f"  fabric drops {drops} {pd}")
        if up: print("  leaf->spine MB", " ".join(f"{k}:{v:.1f}" for k,v in sorted(up.items())))
        if down: print("  spine->leaf MB", " ".join(f"{k}:{v:.1f}" for k,v in sorted(down.items())))
        hc = r.get("host_counters") or {}
        tot = (hc.get("nstat") or {}).get("totals") or {}
        print("  nstat", " ".join(f"{k.replace('TcpExt','')}={v}" for k,v in tot.items() if v))
        nic = hc.get("nic") or []
        print("  nic drops", sum(q.get("drops",0) for q in nic), "requeues", sum(q.get("requeues",0) for q in nic),
              "sent pkts", sum(q.get("sent_packets",0) for q in nic if q.get("kind")=="htb"))
        fc = hc.get("flowcell") or {}
        if fc.get("cells"):
            print(f"  flowcell cells {fc['cells']} packets {fc['packets']} bytes {fc['bytes']} mean cell {fc['bytes']/fc['cells']/1024:.1f} KB mean skb {fc['bytes']/fc['packets']:.0f} B fallbacks {fc.get('fallbacks')} raw {fc.get('raw')}")
        pg = hc.get("presto_gro") or {}
        if pg:
            keys = sorted({k for d in pg.values() for k in d if isinstance(d.get(k), int)})
            print("  presto_gro", {k: sum(d.get(k,0) for d in pg.values()) for k in keys if k not in ("alpha","beta","timeout_min_us","timeout_max_us","max_segs","enabled","ewma_us")})
        for s in hc.get("ss") or []:
            fl = [x for x in s["flows"] if "cwnd" in x]
            if not fl: print("  ss", s["at"], "no flows"); continue
            def m(k):
                v=[x.get(k,0) for x in fl]; return f"{k} {st.mean(v):.1f} [{min(v)}-{max(v)}]"
            print(f"  ss@{s['at']}", ", ".join(m(k) for k in ("cwnd","unacked","rtt_ms","minrtt_ms","reordering","reord_seen","retrans_total","dsack_dups","wmem_alloc","wmem_queued","notsent")),
                  "app_limited", sum(1 for x in fl if x.get("app_limited")), "/", len(fl))
            q = s.get("queues") or {}
            if q and "error" not in q:
                print("    queues KB:", " ".join(f"{k}:{v[0]//1024}" for k, v in sorted(q.items(), key=lambda kv: -kv[1][0])[:20]))
