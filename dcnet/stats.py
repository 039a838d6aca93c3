"""Statistics shared by every report: one percentile, one CPU sampler."""


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
