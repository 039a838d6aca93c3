"""The benches' calibration on the star network (dcnet.testbed.netlab):
what one unshaped cubic flow achieves in this guest, from which d2tcp and
fastlane derive their bottleneck rate."""
from dcnet.stats import cpu_busy, cpu_sample

CALIBRATE_BYTES = 8_000_000


def calibrate():
    """(Mbit/s, virtual CPU busy fraction) of one unshaped cubic flow
    h1 -> sw -> rx in this guest."""
    from dcnet.testbed.netlab import DLTRAFFIC, Lab, json_lines
    lab = Lab(["h1", "rx"], prefix="c")
    try:
        lab.server("rx", 5001, cc="cubic")
        c0 = cpu_sample()
        p = lab.spawn("h1", [DLTRAFFIC, "flow", "-c", lab.ip("rx"), "-p", "5001", "--bytes",
                             str(CALIBRATE_BYTES), "--cc", "cubic", "--id", "calibrate"])
        out, err = p.communicate(timeout=600)
        busy = cpu_busy(c0, cpu_sample())
        if p.returncode != 0:
            raise RuntimeError(f"calibration flow failed: {err}")
        rec = next(r for r in json_lines(out) if r["type"] == "flow")
        return rec["bytes"] * 8 / rec["fct_us"], busy
    finally:
        lab.close()
