"""docs/testbed.md's table of forwarding modes, from their declarations
(dcnet/testbed/modes)."""
from dcnet.doctables import md_table, table
from dcnet.testbed import modes


@table("testbed-modes")
def mode_table():
    return md_table(["mode", "what the fabric does"],
                    [(f"`{n}`", modes.get(n).doc) for n in modes.names()])
