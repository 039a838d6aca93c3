"""python -m dcnet: one command for everything the Makefile runs in Python.

    python -m dcnet [--config FILE] COMMAND [ARGS...]
    python -m dcnet COMMAND --help

Each command hands its arguments to one module's main(); the Makefile's
targets are these commands with the build's paths filled in (docs/
getting-started.md lists both).  The benches (`bench NAME`) are declared
once, in BENCHES: a module of dcnet.bench with its own options, or a
testbed experiment run by the testbed's driver.
"""
import argparse
import os
import sys

from dcnet import ROOT

EXPERIMENTS = os.path.join(ROOT, "testbed", "experiments")


def _results(name):
    """the default results directory of a command: $RESULTS/NAME (the
    Makefile's RESULTS, else the repository's results/)"""
    from dcnet import config
    return os.path.join(config.get("RESULTS"), name)


def _kernel():
    from dcnet import hostrun
    return hostrun.default_kernel()


def _with_defaults(argv, **defaults):
    """argv with --OPT VALUE prepended for each default the caller did not
    give (so that --help still shows the module's own text)"""
    given = {a.split("=", 1)[0] for a in argv if a.startswith("--")}
    pre = []
    for opt, value in defaults.items():
        flag = "--" + opt.replace("_", "-")
        if flag not in given and value is not None:
            pre += [flag, str(value)]
    return pre + list(argv)


# ------------------------------------------------------------------ benches

def _module_bench(modname, out):
    def run(argv, prog):
        import importlib
        mod = importlib.import_module(modname)
        if "-h" in argv or "--help" in argv:
            return mod.main(argv, prog=prog)
        return mod.main(_with_defaults(argv, out=_results(out)), prog=prog)
    return run


def _experiment_bench(exp, out):
    """a bench that is a testbed experiment (testbed/experiments/EXP.json)"""
    def run(argv, prog):
        from dcnet.testbed import run as testbed
        if "-h" in argv or "--help" in argv:
            return testbed.main(argv, prog=prog)
        return testbed.main(_with_defaults(argv, experiment=os.path.join(EXPERIMENTS, exp + ".json"),
                                           out=_results(out)), prog=prog)
    return run


# bench-fastlane-clos: three testbed experiments, then one report of them
FASTLANE_CLOS = (("fastlane-scatter", "clos"), ("fastlane-degraded", "clos-degraded"),
                 ("fastlane-share", "clos-share"))


def _fastlane_clos(argv, prog):
    ap = argparse.ArgumentParser(prog=prog, description=(
        "FastLane over multiple paths on the Clos: the three testbed experiments "
        + ", ".join(e for e, _ in FASTLANE_CLOS) + " into OUT/clos, OUT/clos-degraded, "
        "OUT/clos-share, then their report (OUT/clos/fastlane-scatter.md)"))
    ap.add_argument("--out", default=_results("bench-fastlane"))
    ap.add_argument("--report-only", action="store_true",
                    help="boot nothing: rewrite the report of the three runs already in OUT")
    a, rest = ap.parse_known_args(argv)
    from dcnet.bench import fastlane_clos
    from dcnet.testbed import run as testbed
    outs = [os.path.join(a.out, sub) for _, sub in FASTLANE_CLOS]
    if not a.report_only:
        for (exp, _), out in zip(FASTLANE_CLOS, outs):
            rc = testbed.main(rest + ["--experiment", os.path.join(EXPERIMENTS, exp + ".json"),
                                      "--out", out], prog=prog)
            if rc:
                return rc
    fastlane_clos.report(*outs)
    print(f"report: {outs[0]}/fastlane-scatter.md")
    return 0


# Presto's experiments (make bench-presto-NAME): testbed/experiments/
# presto-NAME.json into bench-presto-NAME, the grid (presto.json) into
# bench-presto
PRESTO = ("grid", "rx", "cpu", "cpu-clos", "flowlet", "oversub", "trace", "failover",
          "steady-stride", "steady-bijection", "steady-random")


def _presto_all(argv, prog):
    """every Presto experiment in turn (make -j3 bench-presto runs them side by side)"""
    if "-h" in argv or "--help" in argv:
        print(f"usage: {prog} [TESTBED OPTIONS]\n\nRuns bench presto-NAME for NAME in "
              + ", ".join(PRESTO) + ", one after the other, with the testbed's options "
              "(--kernel, --repeat, ...; not --out or --experiment).")
        return 0
    rc = 0
    for name in PRESTO:
        rc = BENCHES[f"presto-{name}"][1](argv, f"{prog} (presto-{name})") or rc
    return rc


BENCHES = {
    "d2tcp": ("D2TCP's deadline microbenchmark (Fig. 6) and fan-in (Fig. 7)",
              _module_bench("dcnet.bench.d2tcp", "bench-d2tcp")),
    "d2tcp-atscale": ("D2TCP at scale on the Clos (testbed/experiments/d2tcp-atscale.json)",
                      _experiment_bench("d2tcp-atscale", "bench-d2tcp-atscale")),
    "htb": ("congestion signals from HTB rate limiters",
            _module_bench("dcnet.bench.htb", "bench-htb")),
    "fastlane": ("FastLane on one switch: partition-aggregate and incast",
                 _module_bench("dcnet.bench.fastlane", "bench-fastlane")),
    "fastlane-clos": ("FastLane over multiple paths on the Clos (Figs. 4-6)", _fastlane_clos),
    "presto": ("every Presto experiment, one after the other", _presto_all),
    "presto-flowlet-sweep": ("flowlet gaps of 2-50 ms beside Optimal, Presto and l2ecmp",
                             _experiment_bench("presto-flowlet-sweep", "bench-presto-flowlet-sweep")),
}
for _name in PRESTO:
    _exp = "presto" if _name == "grid" else f"presto-{_name}"
    BENCHES[f"presto-{_name}"] = (f"Presto: testbed/experiments/{_exp}.json",
                                  _experiment_bench(_exp, "bench-presto" if _name == "grid"
                                                    else f"bench-presto-{_name}"))


def cmd_bench(argv, prog):
    if not argv or argv[0] in ("-h", "--help"):
        width = max(map(len, BENCHES))
        print(f"usage: {prog} NAME [OPTIONS]  ({prog} NAME --help: its options)\n\nbenches:")
        for name, (doc, _) in BENCHES.items():
            print(f"  {name:{width}s}  {doc}")
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in BENCHES:
        sys.exit(f"{prog}: no bench {name!r}; one of: {', '.join(BENCHES)}")
    return BENCHES[name][1](rest, f"{prog} {name}")


# ----------------------------------------------------------------- commands

def cmd_check(argv, prog):
    from dcnet.host import check
    return check.main(argv, prog=prog)


def cmd_testbed(argv, prog):
    from dcnet.testbed import run
    if "-h" in argv or "--help" in argv:
        return run.main(argv, prog=prog)
    return run.main(_with_defaults(argv, out=_results("testbed")), prog=prog)


def cmd_demo(argv, prog):
    """the default demonstration: bench d2tcp at fan-in 40 into $RESULTS/demo"""
    from dcnet.bench import d2tcp
    if "-h" in argv or "--help" in argv:
        return d2tcp.main(argv, prog=prog)
    out = _results("demo")
    argv = _with_defaults(argv, out=out, fanins=40)
    rc = d2tcp.main(argv, prog=prog)
    a = argparse.ArgumentParser(add_help=False)
    a.add_argument("--out")
    print(f"demo report: {a.parse_known_args(argv)[0].out}/report.md")
    return rc


def cmd_docs_tables(argv, prog):
    from dcnet.doctables.__main__ import main
    ap = argparse.ArgumentParser(prog=prog, description=(
        "rewrite every generated table and page in README.md and docs/ from docs/results/ "
        "and the code (docs/configuration.md among them)"))
    ap.add_argument("--check", action="store_true", help="change nothing; fail when one is stale")
    a = ap.parse_args(argv)
    return main(["--check"] if a.check else [])


def cmd_determinism(argv, prog):
    from dcnet.bench import determinism
    return determinism.main(argv, prog=prog)


def cmd_vmrun(argv, prog):
    from dcnet.host import vmrun
    return vmrun.main(argv, prog=prog)


def cmd_report(argv, prog):
    from dcnet.testbed import report
    return report.main(argv, prog=prog)


def cmd_workloads(argv, prog):
    from dcnet.testbed import workloads
    return workloads.main(argv, prog=prog)


def cmd_experiment(argv, prog):
    from dcnet.testbed import experiment
    return experiment.main(argv, prog=prog)


def cmd_presto_gro(argv, prog):
    from dcnet import prestogro
    return prestogro.main(argv, prog=prog)


def cmd_htb_flows(argv, prog):
    from dcnet import htbflows
    return htbflows.main(argv, prog=prog)


def cmd_config(argv, prog):
    from dcnet import config
    return config.main(argv, prog=prog)


COMMANDS = {
    "check": (cmd_check, "make check: host tests, then KUnit and the guest tests in debug VMs "
                         "(--host-only: the host tests)"),
    "bench": (cmd_bench, "run a bench (make bench-NAME); `bench --help` lists them"),
    "testbed": (cmd_testbed, "run a testbed experiment on the emulated Clos (make testbed)"),
    "demo": (cmd_demo, "the default demonstration, D2TCP at fan-in 40 (make demo)"),
    "docs-tables": (cmd_docs_tables, "rewrite the generated tables in README.md and docs/ (make docs-tables)"),
    "determinism": (cmd_determinism, "what of a virtual-time guest repeats from boot to boot"),
    "vmrun": (cmd_vmrun, "boot a kernel and run a command in it"),
    "report": (cmd_report, "a testbed report from a raw.json"),
    "workloads": (cmd_workloads, "print a workload's flows as JSON"),
    "experiment": (cmd_experiment, "check experiment files against the schema"),
    "presto-gro": (cmd_presto_gro, "show or set Presto GRO on a device (its generic netlink family)"),
    "htb-flows": (cmd_htb_flows, "dump the flow tables of HTB's ecn_mode ece/rwnd (generic netlink)"),
    "config": (cmd_config, "print the settings (DCNET_* variables, dcnet.toml) in effect"),
}


def parser():
    ap = argparse.ArgumentParser(
        prog="python -m dcnet", allow_abbrev=False,
        description="dcnet's harness: tests, benches, the testbed and the docs' tables",
        epilog="`python -m dcnet COMMAND --help` shows a command's options. Settings: "
               "DCNET_* environment variables over the file --config names (default: "
               "dcnet.toml in the repository, if present); docs/configuration.md lists them.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", metavar="FILE", help="settings file (TOML; default dcnet.toml)")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, doc) in COMMANDS.items():
        sub.add_parser(name, help=doc, add_help=False)
    return ap


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = parser()
    # the command's own arguments go to it untouched (its --help too)
    at = next((i for i, a in enumerate(argv) if a in COMMANDS), None)
    if at is None:
        a = ap.parse_args(argv)
        ap.print_help()
        return 0 if ("-h" in argv or "--help" in argv) else 2
    a = ap.parse_args(argv[:at + 1])
    from dcnet import config
    try:
        config.load(a.config)
    except config.ConfigError as e:
        sys.exit(f"dcnet: {e}")
    fn = COMMANDS[a.command][0]
    rc = fn(argv[at + 1:], f"python -m dcnet {a.command}")
    return rc if isinstance(rc, int) else 0
