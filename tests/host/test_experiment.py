"""Experiment files are checked before any boot (testbed/experiment.py,
testbed/experiment.schema.json): unknown keys, types and ranges are errors
that name the file and the key's JSON path."""
import glob
import inspect
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dcnet.testbed import experiment
from dcnet.testbed import fabric
from dcnet.testbed import workloads
from dcnet.testbed.experiment import ExperimentError, validate_experiment

SHIPPED = sorted(glob.glob(os.path.join(ROOT, "testbed", "experiments", "*.json")))


def base():
    with open(os.path.join(ROOT, "testbed", "experiments", "default.json")) as f:
        return json.load(f)


def write(tmp_path, exp, name="x.json"):
    p = tmp_path / name
    p.write_text(json.dumps(exp))
    return str(p)


def problems_of(exp):
    with pytest.raises(ExperimentError) as ei:
        validate_experiment(exp, name="exp.json")
    return str(ei.value)


@pytest.mark.parametrize("path", SHIPPED, ids=os.path.basename)
def test_shipped_experiments_validate(path):
    exp = validate_experiment(path)
    assert exp["schemes"] and exp["workloads"]


def test_the_shipped_set_is_the_expected_one():
    assert {os.path.basename(p) for p in SHIPPED} >= {"default.json", "fastlane.json", "sized.json"}


def test_unknown_workload_key_names_the_file_the_path_and_the_key(tmp_path):
    exp = base()
    exp["workloads"][1] = {"name": "bijection", "sede": 1}
    path = write(tmp_path, exp)
    with pytest.raises(ExperimentError) as ei:
        validate_experiment(path)
    msg = str(ei.value)
    assert f"{path}: workloads[1]: unknown key 'sede'" in msg
    assert "did you mean 'seed'" in msg
    assert isinstance(ei.value, ValueError)
    assert ei.value.problems == [msg.split(": ", 1)[1]]


@pytest.mark.parametrize("where,path", [
    (lambda e: e.__setitem__("bogus", 1), "unknown key 'bogus'"),
    (lambda e: e["topology"].__setitem__("spine", 4), "topology: unknown key 'spine'"),
    (lambda e: e["schemes"][1].__setitem__("sysctl", {}), "schemes[1]: unknown key 'sysctl'"),
    (lambda e: e["workloads"][0].__setitem__("with", [{"name": "mice", "cuont": 3}]),
     "workloads[0].with[0]: unknown key 'cuont'"),
    (lambda e: e["workloads"][0].__setitem__("with", [{"name": "mice", "label": "m"}]),
     "workloads[0].with[0]: unknown key 'label'"),
    (lambda e: e["workloads"][0].__setitem__("seed", 1), "workloads[0]: unknown key 'seed' for workload 'stride'"),
    (lambda e: e.__setitem__("faults", [{"at_s": 1, "node": "l1", "port": "s1", "action": "down", "when": 2}]),
     "faults[0]: unknown key 'when'"),
])
def test_unknown_keys_at_every_level(where, path):
    exp = base()
    where(exp)
    assert f"exp.json: {path}" in problems_of(exp)


@pytest.mark.parametrize("key,value,msg", [
    ("spines", 0, "topology.spines: must be >= 1 (is 0)"),
    ("leaves", 0, "topology.leaves: must be >= 1"),
    ("hosts_per_leaf", 0, "topology.hosts_per_leaf: must be >= 1"),
    ("link_mbit", 0, "topology.link_mbit: must be > 0"),
    ("fabric_mbit", -5, "topology.fabric_mbit: must be > 0 (is -5)"),
    ("fabric_mbit", 0, "topology.fabric_mbit: must be > 0"),
    ("buffer_bytes", 0, "topology.buffer_bytes: must be >= 1500"),
    ("kind", "fattree", "topology.kind: must be one of \"clos\", \"single\""),
    ("spines", "4", "topology.spines: must be an integer, not a string"),
    ("spines", 4.0, "topology.spines: must be an integer, not a number (4.0) (write 4, not 4.0)"),
    ("link_mbit", True, "topology.link_mbit: must be a number, not a boolean"),
    ("fastlane", 1, "topology.fastlane: must be a boolean, not an integer"),
])
def test_topology_types_and_ranges(key, value, msg):
    exp = base()
    exp["topology"][key] = value
    assert msg in problems_of(exp)


@pytest.mark.parametrize("change,msg", [
    (lambda e: e.__setitem__("duration_s", 0), "duration_s: must be > 0"),
    (lambda e: e.__setitem__("duration_s", "10"), "duration_s: must be a number"),
    (lambda e: e.__setitem__("rtt_probe", "yes"), "rtt_probe: must be a boolean"),
    (lambda e: e.__setitem__("rtt_probe_mps", 0), "rtt_probe_mps: must be >= 1"),
    (lambda e: e.__setitem__("schemes", []), "schemes: must not be empty"),
    (lambda e: e.__delitem__("workloads"), "missing key 'workloads'"),
    (lambda e: e["schemes"][2].__setitem__("subflows", 0), "schemes[2].subflows: must be >= 1"),
    (lambda e: e["schemes"][2].__setitem__("subflows", 9), "schemes[2].subflows: must be <= 8"),
    (lambda e: e["schemes"][1].__setitem__("subflows", 4), "schemes[1]: subflows is only for mode \"mptcp\""),
    (lambda e: e["schemes"][1].__setitem__("mode", "flowlet"), "schemes[1].mode: must be one of"),
    (lambda e: e["schemes"][1].__delitem__("name"), "schemes[1]: missing key 'name'"),
    (lambda e: e["schemes"][1].__setitem__("topology", {"spines": 0}), "schemes[1].topology.spines: must be >= 1"),
    (lambda e: e["sysctls"].__setitem__("net.ipv4.tcp_ecn", True),
     "sysctls[\"net.ipv4.tcp_ecn\"]: must be a string or an integer, not a boolean"),
    (lambda e: e["workloads"][0].__setitem__("stride", 0), "workloads[0].stride: must be >= 1"),
    (lambda e: e["workloads"][1].__setitem__("seed", "1"), "workloads[1].seed: must be an integer"),
    (lambda e: e["workloads"].append({"name": "partagg", "load": 0}), "workloads[2].load: must be > 0"),
    (lambda e: e["workloads"].append({"name": "mice", "bytes": -1}), "workloads[2].bytes: must be >= 1"),
    (lambda e: e["workloads"].append({"name": "elephants"}), "workloads[2].name: must be one of"),
    (lambda e: e["workloads"].append({"seed": 1}), "workloads[2]: missing key 'name'"),
    (lambda e: e["schemes"][1].update(mode="presto", flowlet_gap_us=-1), "schemes[1].flowlet_gap_us: must be >= 0"),
    (lambda e: e["schemes"][1].update(mode="presto", flowlet_gap_us=10000001),
     "schemes[1].flowlet_gap_us: must be <= 10000000"),
    (lambda e: e["schemes"][1].update(mode="presto", flowlet_gap_us=0.5),
     "schemes[1].flowlet_gap_us: must be an integer"),
    (lambda e: e["schemes"][1].update(mode="ecmp", flowlet_gap_us=100),
     "schemes[1].flowlet_gap_us: flowlets run on Presto's datapath"),
])
def test_experiment_types_and_ranges(change, msg):
    exp = base()
    change(exp)
    assert f"exp.json: {msg}" in problems_of(exp)


def fault(**kw):
    return dict({"at_s": 3, "node": "l1", "port": "s1", "action": "down"}, **kw)


def clos_only():
    exp = base()
    exp["schemes"] = [s for s in exp["schemes"] if "topology" not in s]
    exp["duration_s"] = 10  # the fault cases below are timed against 10 s
    return exp


@pytest.mark.parametrize("f,msg", [
    (fault(at_s=-1), "faults[0].at_s: must be >= 0 (is -1)"),
    (fault(action="cut"), "faults[0].action: must be one of \"down\", \"up\", \"degrade\" (is \"cut\")"),
    (fault(action="degrade"), "faults[0]: missing key 'mbit'"),
    (fault(action="degrade", mbit=0), "faults[0].mbit: must be > 0"),
    (fault(mbit=1), "faults[0]: mbit is only for action \"degrade\""),
    (fault(node=""), "faults[0].node: must not be empty"),
    (fault(at_s=10), "faults[0].at_s: 10 is not before the end of the run (duration_s 10)"),
    (fault(node="l5"), "faults[0]: no node 'l5' (kind clos: h1..h16, l1..l4, s1..s4)"),
    (fault(port="s5"), "faults[0]: node 'l1' has no port 's5' (its ports: h1, h2, h3, h4, s1, s2, s3, s4)"),
])
def test_faults(f, msg):
    exp = clos_only()
    exp["faults"] = [f]
    assert f"exp.json: {msg}" in problems_of(exp)


def test_valid_faults_pass():
    exp = clos_only()
    exp["faults"] = [fault(), fault(at_s=6, action="up"), fault(port="s2", action="degrade", mbit=1),
                     fault(node="h1", port="eth0"), fault(node="s4", port="l4", at_s=0)]
    validate_experiment(exp)


def test_a_fault_must_exist_in_every_schemes_topology():
    """faults apply to every scheme's run: Optimal (one switch) has no l1"""
    exp = base()
    exp["faults"] = [fault()]
    msg = problems_of(exp)
    assert "exp.json: faults[0]: no node 'l1' (kind single: h1..h16, o1) in the topology of scheme 'optimal'" in msg


@pytest.mark.parametrize("change,msg", [
    (lambda e: e["schemes"].append({"name": "ecmp"}), "schemes[3].name: 'ecmp' is also schemes[1]'s name"),
    (lambda e: e["workloads"].append({"name": "stride", "stride": 4}),
     "workloads[2]: its label 'stride' is also workloads[0]'s"),
    (lambda e: e["topology"].update(ecn_k_bytes=30000, delay_us=100),
     "topology: ecn_k_bytes and delay_us cannot be combined"),
    (lambda e: e["schemes"][1].__setitem__("topology", {"fastlane": True, "delay_us": 100}),
     "schemes[1].topology: fastlane and delay_us cannot be combined on one port (with the experiment's topology)"),
    (lambda e: e["topology"].update(ecn_k_bytes=131072), "topology: ecn_k_bytes 131072 must be below buffer_bytes"),
    (lambda e: e["topology"].update(leaves=1, hosts_per_leaf=1), "topology: 1 host: a workload needs at least 2"),
])
def test_checks_across_keys(change, msg):
    exp = base()
    change(exp)
    assert f"exp.json: {msg}" in problems_of(exp)


def test_distinct_labels_make_repeated_workloads_valid():
    exp = base()
    exp["workloads"].append({"name": "stride", "stride": 4, "label": "stride-4"})
    validate_experiment(exp)


def test_every_problem_at_once():
    exp = base()
    exp["topology"]["spines"] = 0
    exp["workloads"][1]["sede"] = 1
    exp["duration_s"] = -1
    with pytest.raises(ExperimentError) as ei:
        validate_experiment(exp, name="e.json")
    assert len(ei.value.problems) == 3
    assert all(line.startswith("e.json: ") for line in str(ei.value).splitlines())


def test_not_json_and_duplicate_keys(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"schemes": [],\n "workloads": [}\n')
    with pytest.raises(ExperimentError, match=r"bad\.json: line 2 column \d+: not JSON"):
        validate_experiment(str(p))
    p.write_text('{"schemes": [{"name": "a"}], "workloads": [{"name": "stride", "stride": 1, "stride": 2}]}')
    with pytest.raises(ExperimentError, match="bad.json: duplicate key 'stride'"):
        validate_experiment(str(p))
    with pytest.raises(ExperimentError, match="nope.json: cannot read it"):
        validate_experiment(str(tmp_path / "nope.json"))
    with pytest.raises(ExperimentError, match="must be an object, not an array"):
        validate_experiment([], name="list.json")


def test_schema_follows_the_workload_generators():
    """the schema's workloads are workloads.py's, and each takes only
    keywords its generator has (and every keyword it has, but for those
    the runner sets or ignores)"""
    with open(experiment.SCHEMA) as f:
        schema = json.load(f)
    defs = schema["$defs"]
    assert set(defs["workload_name"]["enum"]) == set(workloads.WORKLOADS)
    fns = {n: workloads.trace if n in ("websearch", "datamining") else fn for n, fn in workloads.WORKLOADS.items()}
    # elephants run for the experiment's duration_s (iperf3 -t), never their own
    not_in_schema = {"stride": {"duration_s"}, "bijection": {"duration_s"}, "random": {"duration_s"},
                     "pairs": {"duration_s"}, "shuffle": set(), "mice": set(), "websearch": set(), "datamining": set(), "partagg": set(),
                     "oldi": set()}
    for kind, extra in (("workload", {"name", "label", "with"}), ("part", {"name"})):
        for name, fn in fns.items():
            branch = [b["then"] for b in defs[kind]["allOf"]
                      if name in b["if"]["properties"]["name"].get("enum", [b["if"]["properties"]["name"].get("const")])]
            assert len(branch) == 1, (kind, name)
            assert branch[0]["additionalProperties"] is False
            keys = set(branch[0]["properties"]) - extra
            params = {p.name for p in inspect.signature(fn).parameters.values()
                      if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)} - {"hosts", "cdf"}
            assert keys <= params, (kind, name, keys - params)
            assert params - keys == not_in_schema[name], (kind, name, params - keys)


def test_every_object_of_the_schema_is_closed():
    """additionalProperties false wherever properties are listed, but in
    an "if" and in the workload entries, whose "then" per name is closed"""
    with open(experiment.SCHEMA) as f:
        schema = json.load(f)
    open_ok = ("/$defs/workload", "/$defs/part")
    seen = []

    def walk(node, path):
        if isinstance(node, dict):
            if isinstance(node.get("properties"), dict) and not path.endswith("/if") and path not in open_ok:
                assert node.get("additionalProperties") is False, path
                seen.append(path)
            for k, v in node.items():
                walk(v, f"{path}/{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{path}/{i}")
    walk(schema, "")
    assert "" in seen and "/$defs/topology" in seen and "/$defs/fault" in seen and len(seen) >= 14


@pytest.mark.parametrize("topo", [dict(), dict(spines=2, leaves=3, hosts_per_leaf=2), dict(kind="single"),
                                  dict(kind="single", hosts=5)])
def test_fault_links_are_the_fabrics(topo):
    """experiment._links names nodes and ports as fabric.Fabric._plan does
    (without building anything)"""
    t = fabric.Topology(**topo)
    fab = fabric.Fabric.__new__(fabric.Fabric)
    fab.topo, fab.mode, fab.subflows = t, "ecmp", 8
    fab.hosts, fab.switches, fab.links = {}, [], []
    fab._plan()
    ports = {}
    for a, pa, b, pb in fab.links:
        ports.setdefault(a, set()).add(pa)
        ports.setdefault(b, set()).add(pb)
    assert {n: set(p) for n, p in experiment._links(t).items()} == ports


def test_cli(tmp_path):
    good = SHIPPED[0]
    exp = base()
    exp["workloads"][1]["sede"] = 1
    bad = write(tmp_path, exp)
    r = subprocess.run([sys.executable, os.path.join(ROOT, "testbed", "experiment.py"), good, bad],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert f"{good}: ok" in r.stdout
    assert f"{bad}: workloads[1]: unknown key 'sede'" in r.stderr


# ------------------------------------------------------- testbed/run.py


def run_main(monkeypatch, argv):
    from dcnet.testbed import run
    monkeypatch.setattr(sys, "argv", ["run.py"] + argv)
    booted = []
    monkeypatch.setattr(run.subprocess, "run", lambda *a, **kw: booted.append(a) or pytest.fail("booted"))
    with pytest.raises(SystemExit) as ei:
        run.main()
    assert not booted
    return ei.value.code


@pytest.mark.parametrize("guest", [False, True])
def test_run_rejects_a_bad_experiment_before_any_boot(tmp_path, monkeypatch, capsys, guest):
    exp = base()
    exp["workloads"][1] = {"name": "bijection", "sede": 1}
    path = write(tmp_path, exp)
    code = run_main(monkeypatch, (["--guest"] if guest else []) + ["--experiment", path, "--out", str(tmp_path / "o")])
    assert code == 2
    err = capsys.readouterr().err
    assert f"{path}: workloads[1]: unknown key 'sede'" in err
    assert not (tmp_path / "o" / "raw.json").exists()


def test_run_checks_the_duration_override(tmp_path, monkeypatch, capsys):
    exp = clos_only()
    exp["faults"] = [fault(at_s=5)]
    path = write(tmp_path, exp)
    assert run_main(monkeypatch, ["--experiment", path, "--duration", "4"]) == 2
    assert f"{path} (with --duration 4): faults[0].at_s: 5 is not before the end" in capsys.readouterr().err
    assert run_main(monkeypatch, ["--experiment", path, "--duration", "-1"]) == 2
    assert "--duration must be > 0" in capsys.readouterr().err


def test_schema_topology_is_fabric_topology():
    import dataclasses
    with open(experiment.SCHEMA) as f:
        schema = json.load(f)
    assert set(schema["$defs"]["topology"]["properties"]) == {f.name for f in dataclasses.fields(fabric.Topology)}


def test_flowlet_schemes_validate():
    """"flowlet_gap_us" on a presto scheme (0: flowcells, up to 10 s), and
    the shipped flowlet experiment has the paper's gaps and the scaled ones"""
    exp = base()
    exp["schemes"] = [dict(name=f"fl{g}", mode="presto", flowlet_gap_us=g) for g in (0, 100, 500, 10000000)]
    validate_experiment(exp, name="exp.json")
    fl = validate_experiment(os.path.join(ROOT, "testbed", "experiments", "presto-flowlet.json"))
    gaps = sorted(s["flowlet_gap_us"] for s in fl["schemes"] if "flowlet_gap_us" in s)
    assert gaps == [100, 500, 100000, 500000]
    assert all(s["mode"] == "presto" for s in fl["schemes"] if "flowlet_gap_us" in s)


def test_flowlet_sweep_experiment():
    """the shipped gap sweep: presto-flowlet.json's topology, workload,
    duration and sysctls, Optimal, Presto with 64 KB flowcells, gaps of 2
    to 50 ms on Presto's datapath, and l2ecmp"""
    sw = validate_experiment(os.path.join(ROOT, "testbed", "experiments", "presto-flowlet-sweep.json"))
    fl = validate_experiment(os.path.join(ROOT, "testbed", "experiments", "presto-flowlet.json"))
    for k in ("topology", "workloads", "duration_s", "sysctls"):
        assert sw[k] == fl[k], k
    gaps = [s["flowlet_gap_us"] for s in sw["schemes"] if s.get("flowlet_gap_us")]
    assert gaps == [2000, 5000, 10000, 20000, 50000]
    assert all(s["mode"] == "presto" for s in sw["schemes"] if s.get("flowlet_gap_us"))
    modes = {s["name"]: s["mode"] for s in sw["schemes"]}
    assert modes["presto"] == "presto" and modes["l2ecmp"] == "l2ecmp" and modes["optimal"] == "ecmp"
    assert [s.get("flowcell_bytes") for s in sw["schemes"] if s["name"] == "presto"] == [65536]
