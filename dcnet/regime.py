"""The regime of a measurement: the ratios that decide the papers'
results, ours beside the paper's, as one Markdown table for a report.

A rig that scales link rates but not the kernel's clocks changes these
ratios (a 128 KB port holds 105 us of queue at 10 Gbit/s and 105 ms at
10 Mbit/s; RTOmin stays 200 ms); dilated time (a negative icount shift,
scripts/vmrun.py) keeps the rates and the clocks as the paper had them.
Every figure here is computed from the regime's parameters, none is
measured.
"""

FRAME_BYTES = 1514          # an MTU-sized Ethernet frame as qdiscs count it
LINUX_RTO_MIN_S = 0.2       # TCP_RTO_MIN
LINUX_DELACK_MIN_S = 0.04   # TCP_DELACK_MIN


def ratios(link_bps, rtt_s, buffer_bytes=None, run_s=None, rto_min_s=LINUX_RTO_MIN_S,
           delack_s=LINUX_DELACK_MIN_S, flowcell_bytes=None, instructions_per_ns=None,
           cpu_busy=None):
    """{name: value} for one regime; a parameter left None leaves its
    ratio out (None)."""
    bdp = link_bps * rtt_s / 8 if link_bps and rtt_s else None

    def div(a, b):
        return a / b if a is not None and b else None
    return {
        "link rate (Gbit/s)": link_bps / 1e9 if link_bps else None,
        "base RTT (us)": rtt_s * 1e6 if rtt_s else None,
        "BDP (MTU packets)": div(bdp, FRAME_BYTES),
        # also the buffer's drain time in RTTs
        "buffer / BDP": div(buffer_bytes, bdp),
        "packet time / RTT": div(FRAME_BYTES * 8 / link_bps if link_bps else None, rtt_s),
        "flowcell time / RTT": div(flowcell_bytes * 8 / link_bps if flowcell_bytes and link_bps else None,
                                   rtt_s),
        "RTOmin / RTT": div(rto_min_s, rtt_s),
        "delayed ACK / RTT": div(delack_s, rtt_s),
        "run length (RTTs)": div(run_s, rtt_s),
        "instructions per ns": instructions_per_ns,
        "virtual CPU busy (most of any cell)": cpu_busy,
    }


def _fmt(name, v):
    if v is None:
        return "-"
    if name.startswith("virtual CPU"):
        return f"{v * 100:.0f}%"
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 1:
        return f"{v:.1f}"
    return f"{v:.3g}"


def table(ours, paper, paper_name="paper"):
    """Markdown lines: one row per ratio that either side has."""
    rows = ["| | this run | " + paper_name + " |", "|---|---|---|"]
    for k in ours:
        if ours.get(k) is None and paper.get(k) is None:
            continue
        rows.append(f"| {k} | {_fmt(k, ours.get(k))} | {_fmt(k, paper.get(k))} |")
    return rows
