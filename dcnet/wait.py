"""Wait for an event instead of sleeping for a guess at how long it takes.

A fixed time.sleep() used as synchronisation ("the listener listens by
now", "the neighbour is resolved by now") passes on an idle machine and
fails by chance on a loaded one, where the same event takes longer; and it
costs its full length on the fast machine.  wait_until() polls the event
itself, returns as soon as it happened, and gives up after a bound that
DCNET_TIMEOUT_SCALE stretches as it stretches the boot's (dcnet/hostrun.py)
and a guest command's (dcnet/testbed/netlab.py: sh).

Used by tests/host and tests/guest (the guest finds the package through
PYTHONPATH; this module needs nothing outside the standard library, so the
guest's toolbox has nothing to copy for it).
"""
import time

from dcnet import config


def timeout_scale():
    """DCNET_TIMEOUT_SCALE (default 1): how much slower than a quiet
    machine this run may be."""
    return config.get("DCNET_TIMEOUT_SCALE")


def scaled(seconds):
    """a wall-time bound, stretched by DCNET_TIMEOUT_SCALE"""
    return seconds * timeout_scale()


class WaitTimeout(AssertionError):
    """wait_until's condition never held.  An AssertionError, so that a
    test that fails on it reads as a failed assertion in pytest's report."""


MAX_INTERVAL = 0.25     # seconds: the longest pause between two polls


def wait_until(cond, timeout, what, interval=0.01):
    """Call cond() until it returns something truthy; return that value.

    timeout (seconds, multiplied by DCNET_TIMEOUT_SCALE) bounds the wait;
    when it runs out, raise WaitTimeout saying what never happened (the
    string what, e.g. "server listens on :5001") and the last value cond()
    returned.  interval is the first pause between polls; each later one
    is half as long again, up to MAX_INTERVAL (or interval, if longer): an
    event that comes at once is seen at once, and a poll that starts a
    process (tc, nstat, ss) does not keep a slow guest's CPU busy for the
    whole of a long wait.  cond is called at least once and once more at
    the deadline, so a slow poll (a process start in the debug guest) does
    not lose the last chance.  An exception from cond() propagates: a
    condition that cannot be evaluated is a failure, not a reason to wait.
    """
    end = time.monotonic() + scaled(timeout)
    cap = max(interval, MAX_INTERVAL)
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(max(0.0, min(interval, end - time.monotonic())))
        interval = min(cap, interval * 1.5 if interval > 0 else 0.01)
    v = cond()
    if v:
        return v
    raise WaitTimeout(f"timed out after {scaled(timeout):.1f} s waiting until {what}; last observed: {v!r}")
