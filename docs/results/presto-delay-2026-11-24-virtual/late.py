import json, lzma, sys, statistics as st
# mean elephant throughput over the whole run and over its second half (intervals_bps, 0.5 s each)
for path in sys.argv[1:]:
    raw = json.load(lzma.open(path) if path.endswith(".xz") else open(path))
    for r in raw["runs"]:
        el = [f for f in r["flows"] if f["kind"] == "elephant" and f["tput_bps"] is not None]
        full = st.mean(f["tput_bps"] for f in el) / 1e6
        halves = []
        for f in el:
            iv = f.get("intervals_bps") or []
            n = len(iv)
            halves.append(st.mean(iv[n // 2:]) / 1e6 if n else float("nan"))
        ss = (r.get("host_counters") or {}).get("ss") or []
        fl = [x for x in (ss[-1]["flows"] if ss else []) if "cwnd" in x]
        cw = f"{st.mean(x['cwnd'] for x in fl):.0f}/{st.mean(x.get('rtt_ms',0) for x in fl):.0f}ms" if fl else "-"
        tot = (r.get("host_counters") or {}).get("nstat", {}).get("totals", {})
        print(f"{path:18s} {r['scheme']:11s} {r['workload']:10s} full {full:5.2f} 2nd-half {st.mean(halves):5.2f} min2h {min(halves):5.2f} "
              f"cwnd@.9 {cw} retrans {tot.get('TcpRetransSegs',0)} dsack {tot.get('TcpExtTCPDSACKRecvSegs',0)} sackrec {tot.get('TcpExtTCPSackRecovery',0)} rto {tot.get('TcpExtTCPTimeouts',0)} "
              f"ofo {tot.get('TcpExtTCPOFOQueue',0)} drops {sum(p['drops'] for p in r.get('ports') or [])}")
