"""The fabric's forwarding modes: a scheme's "mode" (testbed/experiments).

A mode is a small class, registered with @register, in a module of this
package (every module here is loaded): its name, a line for the docs (the
mode table in docs/testbed.md is generated from it), what kind of plane it
needs, the scheme keys only it takes, and the ip/tc lines it adds to the
fabric's.  dcnet/testbed/fabric.py asks the mode, not its name:

    vswitched   hosts behind Open vSwitch bridges (dcnet/testbed/presto.py)
    l2          switches forward on destination MAC (the L2 controller)
    knobs       {scheme key: why} of keys only this mode takes (the
                experiment check refuses them with another mode)
    leaf_ip_lines(fab, leaf)   `ip -batch` lines a routed leaf adds at build
    leaf_tc_lines(fab, leaf)   `tc -batch` lines a routed leaf adds at build
    reroute_lines(fab, leaf)   `ip -batch` lines after a link changes state

A new mode is a module here (its class and its line of docs), a host test
of its lines, a guest test, and a scheme that uses it in an experiment
(docs/architecture.md, "Adding a load-balancing scheme").  This package
imports nothing of dcnet: a hook gets the fabric as its argument.
"""
import difflib
import importlib
import pkgutil

MODES = {}


class Mode:
    name = None
    doc = ""
    vswitched = False
    l2 = False
    knobs = {}

    def leaf_ip_lines(self, fab, leaf):
        return []

    def leaf_tc_lines(self, fab, leaf):
        return []

    def reroute_lines(self, fab, leaf):
        return []


def register(cls):
    """class decorator: make cls's mode known by its name"""
    if not cls.name or cls.name in MODES:
        raise ValueError(f"mode {cls.name!r}: no name, or registered twice")
    MODES[cls.name] = cls()
    return cls


def get(name):
    """the mode called name, or ValueError naming the modes there are"""
    _load()
    try:
        return MODES[name]
    except (KeyError, TypeError):
        close = difflib.get_close_matches(str(name), MODES, 1)
        raise ValueError(f"mode {name!r}: " + (f"did you mean {close[0]!r}? " if close else "")
                         + "one of " + ", ".join(MODES)) from None


def names():
    _load()
    return tuple(MODES)


_LOADED = []


def _load():
    if _LOADED:
        return
    _LOADED.append(True)
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")


# The modes whose work is in the fabric's plan (addresses, routes, the L2
# controller, Presto's controller); their lines live there.

@register
class Ecmp(Mode):
    name = "ecmp"
    doc = ("every switch routes IPv4 and IPv6; a leaf reaches other leaves over all spines with "
           "multipath routes hashed on the 5-tuple (`fib_multipath_hash_policy=3`, "
           "`fib_multipath_hash_fields=0x37`, `fib_multipath_hash_seed` 1, both families): the "
           "papers' per-flow ECMP baseline. On a `single` topology this is Optimal")


@register
class Mptcp(Mode):
    name = "mptcp"
    doc = ("the `ecmp` fabric; hosts run upstream Linux MPTCP with `subflows` subflows (default 8; "
           "`subflows - 1` extra addresses per host as `ip mptcp endpoint ADDR subflow`, `ip mptcp "
           "limits set subflows N`; applications under `mptcpize run`); per extra address `ip rule "
           "add from ADDR ipproto tcp dport 20000-65534 unreachable pref 100`")


@register
class L2(Mode):
    name = "l2"
    l2 = True
    doc = ("every switch is a Linux bridge that neither learns nor floods; a controller "
           "(`fabric.Controller`) installs its FDB: destination MAC -> port, one spanning tree per "
           "spine; hosts share one subnet with static neighbours; each host's MAC on one tree "
           "(host index mod S)")


@register
class Presto(Mode):
    name = "presto"
    l2 = vswitched = True
    knobs = {"flowlet_gap_us": "flowlets run on Presto's datapath"}
    doc = ("the `l2` plane, each host behind an Open vSwitch bridge (the patched OVS from `make "
           "ovs`) whose select group per destination sprays flowcells (`flowcell_bytes`, default "
           "64 KB) over one shadow MAC per spanning tree; `presto_gro` turns on Presto GRO at the "
           "receivers; `flowlet_gap_us` switches flowlets instead of flowcells (Presto's Fig. 13 "
           "baseline)")


@register
class L2Ecmp(Mode):
    name = "l2ecmp"
    l2 = vswitched = True
    doc = ("the `presto` plane with a per-flow hash (stock `dp_hash`): ECMP over the spanning "
           "trees, Presto's ECMP baseline on its own L2 plane")
