"""The figures of a results tree: its numeric leaves named by meaning
(flatten), and which of them are headline figures (is_headline), for the
repeat spread (dcnet/hostrun.py) and the samples' summary
(dcnet/samples.py)."""
import math


def flatten(obj, prefix=""):
    """Numeric leaves of a results tree as {path: value}.  List items are
    named by a 'name'/'scheme'/'workload'/... field where they have one,
    so that two runs' cells pair up by meaning, not by position."""
    out = {}
    if isinstance(obj, bool) or obj is None:
        return out
    if isinstance(obj, (int, float)):
        if math.isfinite(obj):
            out[prefix] = float(obj)
        return out
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(obj, list):
        for i, v in enumerate(obj):
            label = str(i)
            if isinstance(v, dict):
                keys = [str(v[k]) for k in ("scheme", "cc", "workload", "name", "load", "n", "fanin", "flows",
                                            "mode", "cell", "x_over_t", "per_vm") if k in v
                        and not isinstance(v[k], (dict, list))]
                if keys:
                    label = "/".join(keys)
            out.update(flatten(v, f"{prefix}[{label}]"))
        return out
    return out


# The figures the repeatability goal is about (issue 15): throughputs,
# saturation, missed-deadline fractions, and FCT percentiles of at least
# MIN_FCT_FLOWS flows.  Everything else (an RTT CDF's points, per-port drop
# counts) is listed too, but not held to the goal.
THROUGHPUT_KEYS = ("bps", "mbit", "tput", "throughput", "of_link", "of_optimal", "saturation",
                   "goodput", "jain")
FRACTION_KEYS = ("missed_fraction", "missed_frac", "deadline_miss")
PCT_KEYS = ("p50", "p90", "p99", "p999", "p99_9", "mean_fct", "fct_")
MIN_FCT_FLOWS = 1000


def is_headline(figure, flat):
    leaf = figure.rsplit(".", 1)[-1].lower()
    if "cpu" in figure or "rtt" in figure.lower() or "calibrat" in figure or "sustained" in figure:
        return False
    if any(k in leaf for k in FRACTION_KEYS):
        return True
    if any(k in leaf for k in THROUGHPUT_KEYS) and "cdf" not in figure:
        return True
    if any(leaf.startswith(k) or k in leaf for k in PCT_KEYS) and "cdf" not in figure:
        # an FCT percentile counts when its cell has enough flows
        parent = figure.rsplit(".", 1)[0] if "." in figure else ""
        for nkey in ("n", "flows", "responses", "count"):
            n = flat.get(f"{parent}.{nkey}" if parent else nkey)
            if n is not None:
                return n >= MIN_FCT_FLOWS
        return False
    return False
