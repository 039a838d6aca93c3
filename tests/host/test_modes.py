"""Forwarding modes as plugins (dcnet/testbed/modes): declared once, found
by the fabric and the experiment check, with their docs generated."""
import os
import re

import pytest

from dcnet import ROOT
from dcnet.testbed import fabric, modes
from dcnet.testbed.experiment import ExperimentError, validate_experiment


def test_the_modes_are_declared_once_each():
    assert set(modes.names()) == {"ecmp", "scatter", "mptcp", "l2", "presto", "l2ecmp"}
    for n in modes.names():
        m = modes.get(n)
        assert m.name == n and m.doc and "\n" not in m.doc
    assert [n for n in modes.names() if modes.get(n).vswitched] == ["presto", "l2ecmp"]
    assert {n for n in modes.names() if modes.get(n).l2} == {"l2", "presto", "l2ecmp"}
    with pytest.raises(ValueError, match="did you mean 'scatter'"):
        modes.get("scater")
    with pytest.raises(ValueError, match="mode 'flowlet'"):
        fabric.Fabric(fabric.Topology(), mode="flowlet")     # before anything is built


def test_the_fabric_asks_the_mode_not_its_name():
    """no mode name is compared in the fabric's build for the modes that
    are plugins (scatter's lines live in modes/scatter.py)"""
    with open(os.path.join(ROOT, "dcnet", "testbed", "fabric.py")) as f:
        src = f.read()
    assert not re.search(r"""mode\s*[!=]=\s*["']scatter["']""", src)
    assert "scatter_rules" not in src and "VSWITCH_MODES" not in src


def plain(mode="scatter"):
    fab = fabric.Fabric.__new__(fabric.Fabric)
    fab.topo, fab.mode, fab.subflows = fabric.Topology(), mode, 8
    fab.hosts, fab.switches, fab.links = {}, [], []
    fab.down, fab.rates = set(), {}
    fab._plan()
    return fab


def test_a_new_mode_is_one_class(monkeypatch):
    """a mode registered in one place: the fabric takes its lines, the
    experiment check takes its name and refuses its knobs elsewhere"""
    from dcnet.testbed import experiment
    monkeypatch.setattr(modes, "MODES", dict(modes.MODES))
    experiment._validator.cache_clear()         # the schema's mode names come from MODES
    try:
        check_a_new_mode()
    finally:
        experiment._validator.cache_clear()


def check_a_new_mode():

    @modes.register
    class Marked(modes.Mode):
        name = "marked"
        doc = "the ecmp fabric; leaves mark every packet"
        knobs = {"mark": "marks are the marked mode's"}

        def leaf_tc_lines(self, fab, leaf):
            return [f"filter add dev {h} ingress matchall action skbedit mark 7" for h in sorted(fab.hosts)
                    if fab.hosts[h].leaf == leaf]

    fab = plain("marked")
    assert fab.scheme.leaf_tc_lines(fab, "l1")[0].startswith("filter add dev h1 ingress")
    assert not fab.l2 and not fab.vswitched
    exp = {"schemes": [{"name": "m", "mode": "marked"}], "workloads": [{"name": "stride"}]}
    assert validate_experiment(exp)["schemes"][0]["mode"] == "marked"
    # a mode's knob with another mode is refused by the check
    exp2 = {"schemes": [{"name": "e", "mode": "ecmp", "flowlet_gap_us": 100}], "workloads": [{"name": "stride"}]}
    with pytest.raises(ExperimentError, match="flowlets run on Presto's datapath: it needs \"mode\": \"presto\""):
        validate_experiment(exp2)


def test_an_unknown_mode_in_an_experiment_names_the_modes():
    exp = {"schemes": [{"name": "x", "mode": "flowlet"}], "workloads": [{"name": "stride"}]}
    with pytest.raises(ExperimentError, match=r"schemes\[0\]\.mode: must be one of .*scatter"):
        validate_experiment(exp)
