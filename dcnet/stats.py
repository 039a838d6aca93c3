"""Statistics shared by every report: one percentile, one CPU sampler."""
import time


def percentile(xs, p):
    """The p-th percentile (0-100) of xs, linearly interpolated between
    the closest ranks (numpy's default, 'linear'); None when xs is empty."""
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    k = (len(xs) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def cpu_sample():
    """(total, idle) jiffies of all CPUs from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v), v[3] + v[4]


def cpu_busy(before, after):
    """Busy fraction of the CPUs between two cpu_sample()s.  In virtual
    time (QEMU icount) this is the virtual CPU's load: when it nears 1 the
    guest's CPU, not the network under test, sets the result."""
    total = after[0] - before[0]
    idle = after[1] - before[1]
    return round(1 - idle / total, 3) if total > 0 else None


CPU_LIMIT = 0.5     # a cell above this is flagged in its report


def sample_at(start_us):
    """cpu_sample() when the traffic starts: at start_us (the dltraffic
    processes' --start-at-us), or now if that has passed.  Process starts
    before it are not part of the measured interval."""
    wait = start_us - time.monotonic_ns() // 1000
    if wait > 0:
        time.sleep(wait / 1e6)
    return cpu_sample()

def busy_pct(busy):
    """a cpu_busy fraction as a percentage; '-' where it was not measured
    (raw records from before it was)"""
    return "-" if busy is None else f"{busy * 100:.0f}%"

def cpu_note(cells):
    """The report's sentence on the virtual CPU: cells is [(label,
    cpu_busy)]; every cell above CPU_LIMIT is named, since there the
    guest's CPU rather than the emulated network may set the result."""
    limit = f"{CPU_LIMIT * 100:.0f}%"
    measured = [(label, b) for label, b in cells if b is not None]
    over = [f"{label} ({busy_pct(b)})" for label, b in measured if b > CPU_LIMIT]
    if over:
        return (f"Virtual CPU above {limit} busy in: {', '.join(over)}; "
                "there the guest's CPU may set the result.")
    if not measured:
        return "The virtual CPU's busy fraction was not measured in this run."
    unmeasured = len(cells) - len(measured)
    return (f"The virtual CPU stayed at or below {limit} busy in every cell"
            + (f" it was measured in ({unmeasured} without a measurement)." if unmeasured else "."))
