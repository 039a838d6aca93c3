#!/usr/bin/env python3
"""Experiment files: checked before any boot.

    from experiment import validate_experiment, ExperimentError
    exp = validate_experiment("testbed/experiments/default.json")

    python3 testbed/experiment.py FILE...       # check files (exit 1 if one is bad)

An experiment (testbed/run.py) is checked against experiment.schema.json
(JSON Schema draft 2020-12: every object closed, types, ranges; a
workload's keys are the parameters of its generator in workloads.py),
then across keys: fabric.Topology's own rules on the experiment's
topology and on each scheme's, at least two hosts, every fault's link in
every scheme's topology and its time within the run, unique scheme names
and workload labels.  A problem is reported as

    FILE: JSON.PATH: what is wrong

(e.g. "testbed/experiments/x.json: workloads[1]: unknown key 'sede'
(did you mean 'seed'?)"), every problem of the file at once, in an
ExperimentError (a ValueError).
"""
import difflib
import functools
import json
import os
import re
import sys

from dcnet import ROOT

HERE = os.path.join(ROOT, "testbed")       # the experiments and their schema
SCHEMA = os.path.join(HERE, "experiment.schema.json")
DEFAULT_DURATION_S = 10         # run.py's default for a missing duration_s

JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "an integer",
              float: "a number", type(None): "null"}


class ExperimentError(ValueError):
    """every problem of one experiment; str() is one line per problem,
    each "NAME: PATH: message\""""

    def __init__(self, name, problems):
        self.name = name
        self.problems = list(problems)
        super().__init__("\n".join(f"{name}: {p}" for p in self.problems))


def json_path(parts):
    """["workloads", 1, "with", 0] -> workloads[1].with[0]"""
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_]*", p):
            out += ("." if out else "") + p
        else:
            out += f"[{json.dumps(p)}]"
    return out


def _at(path, msg):
    return f"{path}: {msg}" if path else msg


@functools.lru_cache(maxsize=None)
def _validator():
    import jsonschema
    base = jsonschema.Draft202012Validator
    # an integer is an integer: 4.0 would reach range() and `ip` as "4.0"
    checker = base.TYPE_CHECKER.redefine("integer", lambda _c, x: isinstance(x, int) and not isinstance(x, bool))
    cls = jsonschema.validators.extend(base, type_checker=checker)
    with open(SCHEMA) as f:
        schema = json.load(f)
    # a scheme's mode: one of the modes dcnet/testbed/modes declares
    from dcnet.testbed import modes
    schema["$defs"]["scheme"]["properties"]["mode"]["enum"] = list(modes.names())
    cls.check_schema(schema)
    return cls(schema)


def _type_name(x):
    return JSON_TYPES.get(type(x), type(x).__name__)


def _schema_problems(err):
    """one ValidationError -> [(path, message)]"""
    path = json_path(err.absolute_path)
    v, val, inst = err.validator, err.validator_value, err.instance
    if v == "additionalProperties" and isinstance(inst, dict):
        known = sorted(k for k in err.schema.get("properties", {}))
        out = []
        for k in inst:
            if k in known:
                continue
            close = difflib.get_close_matches(k, known, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(known)}"
            what = f" for workload {inst['name']!r}" if path.startswith("workloads") and \
                isinstance(inst.get("name"), str) else ""
            out.append((path, f"unknown key {k!r}{what} ({hint})"))
        return out
    if v == "required":
        return [(path, f"missing key {k!r}") for k in val if isinstance(inst, dict) and k not in inst]
    if v == "type":
        want = val if isinstance(val, list) else [val]
        want = " or ".join({"integer": "an integer", "number": "a number", "string": "a string",
                            "boolean": "a boolean", "object": "an object", "array": "an array",
                            "null": "null"}.get(t, t) for t in want)
        extra = f" (write {int(inst)}, not {inst})" if isinstance(inst, float) and inst.is_integer() \
            and "integer" in str(val) else ""
        return [(path, f"must be {want}, not {_type_name(inst)} ({json.dumps(inst)}){extra}")]
    if v in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        op = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}[v]
        return [(path, f"must be {op} {val} (is {json.dumps(inst)})")]
    if v in ("enum", "const"):
        opts = val if v == "enum" else [val]
        return [(path, f"must be one of {', '.join(json.dumps(o) for o in opts)} (is {json.dumps(inst)})")]
    if v == "minItems":
        return [(path, "must not be empty" if val == 1 else f"needs at least {val} items")]
    if v == "minLength":
        return [(path, "must not be empty" if val == 1 else f"needs at least {val} characters")]
    if v == "pattern":
        if "propertyNames" in err.absolute_schema_path:
            return [(path, f"bad key {inst!r}: want a dotted sysctl name (e.g. net.ipv4.tcp_ecn)")]
        return [(path, f"{json.dumps(inst)} does not match {val}")]
    if v == "not" and err.schema.get("description"):
        return [(path, err.schema["description"])]
    return [(path, err.message)]


def _links(t):
    """{node: [ports]} of a fabric.Topology, named as fabric.Fabric._plan
    names them (a switch's port after its peer, a host's uplink eth0)"""
    ports = {}
    if t.kind == "clos":
        spines = [f"s{i}" for i in range(1, t.spines + 1)]
        n = 0
        for li in range(1, t.leaves + 1):
            leaf = f"l{li}"
            for _ in range(t.hosts_per_leaf):
                n += 1
                ports[f"h{n}"] = ["eth0"]
                ports.setdefault(leaf, []).append(f"h{n}")
            for s in spines:
                ports[leaf].append(s)
                ports.setdefault(s, []).append(leaf)
    else:
        for n in range(1, t.hosts + 1):
            ports[f"h{n}"] = ["eth0"]
            ports.setdefault("o1", []).append(f"h{n}")
    return ports


def _topology(d):
    """fabric.Topology(**d) -> (topology, None) or (None, message)"""
    from dcnet.testbed.fabric import Topology
    try:
        t = Topology(**d)
    except (TypeError, ValueError) as e:
        return None, str(e)
    if t.ecn_k_bytes and t.ecn_k_bytes >= t.buffer_bytes:
        return None, (f"ecn_k_bytes {t.ecn_k_bytes} must be below buffer_bytes {t.buffer_bytes}"
                      " (a port would never mark)")
    if t.n_hosts < 2:
        return None, f"{t.n_hosts} host: a workload needs at least 2"
    if t.kind == "single" and t.n_hosts > 255:
        return None, f"kind single takes at most 255 hosts (10.1.i.1), not {t.n_hosts}"
    return t, None


def _cross_problems(exp):
    """[(path, message)]: the checks that span keys (after the schema)"""
    out = []
    base_d = dict(exp.get("topology", {}))
    base, msg = _topology(base_d)
    if msg:
        out.append(("topology", msg))
    topos = []                                  # (scheme name, Topology)
    for i, sc in enumerate(exp["schemes"]):
        if "topology" not in sc:
            if base:
                topos.append((sc["name"], base))
            continue
        t, msg = _topology({**base_d, **sc["topology"]})
        if msg:
            out.append((f"schemes[{i}].topology", f"{msg} (with the experiment's topology)"))
        else:
            topos.append((sc["name"], t))
    seen = {}
    for i, sc in enumerate(exp["schemes"]):
        if sc["name"] in seen:
            out.append((f"schemes[{i}].name", f"{sc['name']!r} is also schemes[{seen[sc['name']]}]'s name"))
        seen.setdefault(sc["name"], i)
    from dcnet.testbed import modes
    for i, sc in enumerate(exp["schemes"]):
        # a mode's own knobs (dcnet/testbed/modes), with another mode
        for m in modes.names():
            for key, why in modes.get(m).knobs.items():
                if sc.get(key) and sc.get("mode", "ecmp") != m:
                    out.append((f"schemes[{i}].{key}", f"{why}: it needs"
                                                       f" \"mode\": \"{m}\", not {sc.get('mode', 'ecmp')!r}"))
    for i, sc in enumerate(exp["schemes"]):
        b = sc.get("cpu_baseline")
        if b is not None and (b not in seen or b == sc["name"]):
            out.append((f"schemes[{i}].cpu_baseline", f"{b!r} is not another scheme of this experiment"))
    seen = {}
    for i, wl in enumerate(exp["workloads"]):
        label = wl.get("label") or "+".join(p["name"] for p in [wl] + list(wl.get("with", [])))
        if label in seen:
            out.append((f"workloads[{i}]", f"its label {label!r} is also workloads[{seen[label]}]'s:"
                                           " give each a distinct \"label\""))
        seen.setdefault(label, i)
    duration = exp.get("duration_s", DEFAULT_DURATION_S)
    for j, fault in enumerate(exp.get("faults", [])):
        if fault["at_s"] >= duration:
            out.append((f"faults[{j}].at_s", f"{fault['at_s']} is not before the end of the run"
                                             f" (duration_s {duration}): the fault would never happen"))
        node, port = fault["node"], fault["port"]
        missing = {}
        for name, t in topos:
            links = _links(t)
            ports = links.get(node)
            if ports is None:
                hosts = sum(1 for n in links if n.startswith("h"))
                switches = [n for n in links if not n.startswith("h")]
                nodes = f"h1..h{hosts}, " + (", ".join(switches) if len(switches) < 4 else
                                             f"l1..l{t.leaves}, s1..s{t.spines}")
                missing.setdefault(f"no node {node!r} (kind {t.kind}: {nodes})", []).append(name)
            elif port not in ports:
                missing.setdefault(f"node {node!r} has no port {port!r} (its ports: {', '.join(ports)})",
                                   []).append(name)
        for what, schemes in missing.items():
            out.append((f"faults[{j}]", f"{what} in the topology of scheme {', '.join(map(repr, schemes))}"
                                        " (faults apply to every scheme)"))
    return out


def _no_duplicates(pairs):
    keys = [k for k, _v in pairs]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ValueError(f"duplicate key {dup[0]!r} (in the object with keys {', '.join(dict.fromkeys(keys))})")
    return dict(pairs)


def load(path):
    """an experiment file as a dict (ExperimentError if it is not JSON)"""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise ExperimentError(path, [f"cannot read it: {e.strerror}"]) from None
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as e:
        raise ExperimentError(path, [f"line {e.lineno} column {e.colno}: not JSON: {e.msg}"]) from None
    except ValueError as e:
        raise ExperimentError(path, [str(e)]) from None


def problems(exp):
    """every problem of an experiment dict, as "PATH: message" strings
    (empty: it is valid)"""
    errs = sorted(_validator().iter_errors(exp),
                  key=lambda e: [(0, x, "") if isinstance(x, int) else (1, 0, x) for x in e.absolute_path])
    found = []
    for e in errs:
        for p in _schema_problems(e):
            if p not in found:
                found.append(p)
    if not found:
        found = _cross_problems(exp)
    return [_at(path, msg) for path, msg in found]


def validate_experiment(src, name=None):
    """check an experiment (a file name or a dict) and return it as a dict;
    raises ExperimentError (a ValueError) naming the file (or `name`) and
    the JSON path of every problem"""
    if isinstance(src, (str, os.PathLike)):
        name = name or os.fspath(src)
        exp = load(src)
    else:
        exp = src
    name = name or "experiment"
    found = problems(exp)
    if found:
        raise ExperimentError(name, found)
    return exp


def main(argv=None, prog=None):
    import argparse
    ap = argparse.ArgumentParser(prog=prog, description="check testbed experiment files (testbed/experiment.schema.json)")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args(argv)
    bad = 0
    for path in a.files:
        try:
            validate_experiment(path)
            print(f"{path}: ok")
        except ExperimentError as e:
            print(e, file=sys.stderr)
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
