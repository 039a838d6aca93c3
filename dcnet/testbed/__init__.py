"""The emulated fabric and its driver (guest side, with a host driver in run).

Layers, each importing only those above it:
    ns          namespace primitives (commands, -batch, setns, sysctl, ethtool)
    fabric      Topology and Fabric (plan, build, forwarding modes, faults)
    presto      Open vSwitch vSwitches and the Presto controller (fabric uses it)
    netlab      Lab, the star network of the benches; tc helpers, parsers
    workloads   the workload generators (pure)
    experiment  experiment files: schema and cross-key checks
    counters, grocap  what a cell measures
    report      raw.json -> results.json and report.md
    run         the testbed's host and guest driver
"""
