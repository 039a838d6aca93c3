"""docs/configuration.md's settings and docs/getting-started.md's commands,
from the code that declares them (dcnet/config.py, dcnet/cli.py)."""
from dcnet import cli, config
from dcnet.doctables import md_table, table


@table("configuration-settings")
def settings():
    return config.markdown() + "\n"


@table("cli-commands")
def commands():
    make = {"check": "`make check`, `make check-host` (`--host-only`)", "testbed": "`make testbed`",
            "demo": "`make demo`", "docs-tables": "`make docs-tables`",
            "vmrun": "`make testbed-physical-selftest`", "bench": "`make bench-NAME`"}
    rows = [(f"`python -m dcnet {name}`", doc, make.get(name, "-"))
            for name, (_, doc) in cli.COMMANDS.items()]
    return md_table(["command", "what", "make target"], rows)


@table("cli-benches")
def benches():
    rows = [(f"`{name}`", doc, f"`make bench-{'presto-grid' if name == 'presto-grid' else name}`")
            for name, (doc, _) in cli.BENCHES.items()]
    return md_table(["bench", "what", "make target"], rows)
