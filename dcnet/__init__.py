"""dcnet: the project's Python harness, one package for the benches, the
testbed, the VM runner and the tests.

    dcnet.hostrun   boot the kernel for a measurement (dcnet.host.vmrun),
                    in virtual time by default, N times; reports' run
                    headers; the repeat spread of every reported figure
    dcnet.stats     percentile (one definition), CPU busy fraction
    dcnet.warm      the guest's toolbox (tools copied to a tmpfs)
    dcnet.partial   a sealed guest's results so far, over its console
    dcnet.regime    the measurement regime of a run
    dcnet.wait      polling with a deadline
    dcnet.host      the host side: vmrun (boot a kernel), sealed (the
                    sealed initramfs), make check's summary, shards and
                    pytest JSONL plugin
    dcnet.testbed   the emulated fabric and its driver: ns (namespace
                    primitives), fabric, presto, netlab, workloads,
                    experiment, counters, grocap, run, report
    dcnet.bench     the benches: d2tcp, htb, fastlane, fastlane_clos
    dcnet.doctables the generated tables in README.md and docs/

The commands (testbed/run.py, bench/d2tcp.py, scripts/vmrun.py, ...) are
shims that call into these modules; the data they read (experiments,
schemas, tools) stays beside them in testbed/ and bench/.
"""
import os

# the repository: experiments, schemas, tools and results are found from here
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
