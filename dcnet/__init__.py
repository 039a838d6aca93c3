"""dcnet: the project's Python harness, shared by the benches (bench/),
the testbed (testbed/) and the tests.

    dcnet.hostrun   boot the kernel for a measurement (scripts/vmrun.py),
                    in virtual time by default, N times; reports' run
                    headers; the repeat spread of every reported figure
    dcnet.stats     percentile (one definition), CPU busy fraction
"""
