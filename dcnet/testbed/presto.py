"""Presto on the emulated fabric: per-host vSwitches and the controller.

Modes of dcnet/testbed/fabric.py that use this module:

  presto   the L2 fabric (switches forward on destination MAC only), each
           host behind an Open vSwitch bridge whose select group per
           destination sprays flowcells over one shadow MAC per spanning
           tree (the kernel datapath's "flowcell" dp_hash algorithm)
  l2ecmp   the same plane with a per-flow hash (stock dp_hash): ECMP over
           the spanning trees, Presto's ECMP baseline on its own L2 plane

Wiring of host hN (all vSwitch ports live in one namespace, PREFIX-vs,
where one ovs-vswitchd serves every host's bridge bN):

    hN:eth0 <-veth-> vs:vN   [bridge bN]   vs:uN <-veth-> leaf:hN

eth0 keeps TSO/GSO (flowcells are TSO-sized, one datapath decision per
super-packet, as in the paper) and GRO (the receiver's GRO sees the
flowcells); uN is the host's NIC towards the fabric: TSO/GSO off, so the
fabric carries MTU packets as hardware links do, and the
host's NIC shaping (HTB at the link rate) sits on it.

Shadow MACs: host N, tree t (spine t) -> 02:dc:TT:00:NN:NN; tree 0 is
the host's real MAC.  The controller (`PrestoController`) installs, for
every shadow MAC, the fabric's entries along its tree (dcnet/testbed/fabric.py
Controller), then in every bridge bN

  - group D per destination host D: one bucket per tree t usable from
    N's leaf to D's leaf: set eth_dst to shadow(D, t), output to uN;
    bucket weights follow the tree's bottleneck capacity for that pair
    (Sec. 3.3: weighted sequences; a cut link prunes the tree);
  - from vN to D's real MAC: group D;
  - from uN to one of N's shadow MACs: back to N's real MAC, output vN.
    The source MAC is left alone: it carries the flowcell ID to the
    receiver's GRO.

The tables come from dcnet/controller/plan.py (the fabric's plan,
Fabric.presto_plan()).  Two ways install them: PrestoController drives
ovs-ofctl batch files (`add-flows`, `add-groups`, modify lines), one
process per bridge per change, with no process of its own (the
default); OpenFlowPresto (Fabric(..., presto_controller=True)) runs the
OpenFlow controller (dcnet/controller/app.py, os-ken) in namespace
PREFIX-vs and points every bridge at it.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from dcnet import config
from dcnet.controller.plan import PORT_UP, PORT_VM, QUANTA, Plan, ofctl_flow, ofctl_group, shadow_mac  # noqa: F401
from dcnet.controller import plan as _plan

from dcnet.testbed.ns import ns_exec

FLOWCELL_BYTES = 65536
VS = "vs"                       # the vSwitches' namespace (node name)

# the patched Open vSwitch as `make ovs` installs it ($BUILD/ovs-install)
OVS_PROGRAMS = {
    "ovs-vsctl": "bin/ovs-vsctl",
    "ovs-ofctl": "bin/ovs-ofctl",
    "ovs-appctl": "bin/ovs-appctl",
    "ovs-dpctl": "bin/ovs-dpctl",
    "ovsdb-tool": "bin/ovsdb-tool",
    "ovs-vswitchd": "sbin/ovs-vswitchd",
    "ovsdb-server": "sbin/ovsdb-server",
    "vswitch.ovsschema": "share/openvswitch/vswitch.ovsschema",
}


def ovs_dir():
    """where the patched Open vSwitch is installed (`make ovs`): DCNET_OVS,
    else $BUILD/ovs-install"""
    return config.get("DCNET_OVS") or os.path.join(config.get("BUILD"), "ovs-install")


def ovs_programs(root=None):
    root = root or ovs_dir()
    out = {}
    for name, rel in OVS_PROGRAMS.items():
        p = os.path.join(root, rel)
        if not os.path.exists(p):
            raise FileNotFoundError(f"{name}: not in {root} (run `make ovs`, or set DCNET_OVS)")
        out[name] = p
    return out


def have_ovs():
    """whether the patched Open vSwitch is installed (make ovs)"""
    try:
        ovs_programs()
        return True
    except FileNotFoundError:
        return False


def group_spec(dst_index, buckets, method="flowcell", flowcell_bytes=FLOWCELL_BYTES):
    """one ovs-ofctl group line: buckets [(tree, weight)] towards host
    dst_index.  method "flowcell" (Presto) or "hash" (per-flow dp_hash)."""
    return ofctl_group(dst_index, buckets, method, flowcell_bytes, PORT_UP)


class VSwitch:
    """one ovsdb-server + ovs-vswitchd for every host's bridge, in
    namespace PREFIX-vs; state in a tmpfs directory"""

    def __init__(self, fab, root=None):
        self.fab = fab
        self.prog = ovs_programs(root)
        self.dir = os.path.join(config.get("DCNET_OVS_RUNDIR"), f"dcnet-ovs-{fab.prefix}")
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.env = dict(os.environ, OVS_RUNDIR=self.dir, OVS_LOGDIR=self.dir, OVS_DBDIR=self.dir,
                        OVS_SYSCONFDIR=self.dir, OVS_PKGDATADIR=os.path.dirname(self.prog["vswitch.ovsschema"]))
        self.db = f"unix:{self.dir}/db.sock"
        self.timing = {}

    def _run(self, argv, input=None, ns=False):
        argv = (ns_exec(self.fab.ns(VS)) if ns else []) + argv
        # generous: in virtual time the guest's clock runs on while
        # ovs-vswitchd loads over 9p (a 60 s vsctl wait ran out once
        # with the host busy)
        p = subprocess.run(argv, input=input, text=True, capture_output=True, env=self.env, timeout=900)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(argv[:4])}... failed ({p.returncode}): {p.stderr.strip()[:1500]}")
        return p.stdout

    def start(self):
        t0 = time.monotonic()
        subprocess.run(["modprobe", "openvswitch"], capture_output=True)
        conf = f"{self.dir}/conf.db"
        self._run([self.prog["ovsdb-tool"], "create", conf, self.prog["vswitch.ovsschema"]])
        self._run([self.prog["ovsdb-server"], conf, f"--remote=punix:{self.dir}/db.sock",
                   f"--pidfile={self.dir}/ovsdb-server.pid", "--detach", "--no-chdir",
                   f"--log-file={self.dir}/ovsdb-server.log"])
        self.vsctl("--no-wait", "init")
        self._run([self.prog["ovs-vswitchd"], self.db, f"--pidfile={self.dir}/ovs-vswitchd.pid",
                   "--detach", "--no-chdir", f"--log-file={self.dir}/ovs-vswitchd.log"], ns=True)
        self.timing["daemons_s"] = time.monotonic() - t0

    def vsctl(self, *args):
        return self._run([self.prog["ovs-vsctl"], f"--db={self.db}", "--timeout=600"] + list(args))

    def ofctl(self, cmd, bridge, *args, input=None):
        return self._run([self.prog["ovs-ofctl"], "-O", "OpenFlow15", cmd, self.mgmt(bridge)] + list(args),
                         input=input)

    def ofctl_many(self, cmd, inputs):
        """`ovs-ofctl cmd BRIDGE -` for every (bridge, input) at once, one
        process per bridge run side by side: a process start costs the
        guest up to a second (9p), and a controller's reaction waits on
        the slowest bridge, not on their sum"""
        procs = []
        for bridge, text in inputs:
            argv = [self.prog["ovs-ofctl"], "-O", "OpenFlow15", cmd, self.mgmt(bridge), "-"]
            # each input from a file: every process has all of it at once
            with tempfile.TemporaryFile("w+") as f:
                f.write(text)
                f.seek(0)
                p = subprocess.Popen(argv, stdin=f, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, env=self.env)
            procs.append((argv, p))
        errors = []
        for argv, p in procs:
            try:
                _o, e = p.communicate(timeout=900)
            except subprocess.TimeoutExpired:
                p.kill()
                _o, e = p.communicate()
            if p.returncode != 0:
                errors.append(f"{' '.join(argv[3:5])} failed ({p.returncode}): {(e or '').strip()[:500]}")
        if errors:
            raise RuntimeError("; ".join(errors))

    def mgmt(self, bridge):
        return f"unix:{self.dir}/{bridge}.mgmt"

    def add_bridges(self, indexes, controller=None):
        """bridge bN with ports vN (OpenFlow 1) and uN (2), one transaction.
        uN is the host's NIC, shaped by dcnet/testbed/fabric.py before it joins
        the bridge: its QoS is `linux-noop`, or ovs-vswitchd would replace
        the NIC's qdisc (HTB at the link rate) with the device's default
        (noqueue on a veth), leaving Presto's senders unshaped.  The
        bridge's datapath ID is N (the controller's plan names hosts by
        it).  controller: the OpenFlow controller's address
        (tcp:127.0.0.1:PORT), out of band; fail_mode stays secure, so a
        bridge keeps forwarding with its tables while the controller is
        away"""
        t0 = time.monotonic()
        args = ["--", "--id=@noop", "create", "qos", "type=linux-noop"]
        for n in indexes:
            args += ["--", "add-br", f"b{n}",
                     "--", "set", "bridge", f"b{n}", "fail_mode=secure",
                     "protocols=OpenFlow10,OpenFlow13,OpenFlow15",
                     f"other-config:datapath-id={n:016x}",
                     "--", "add-port", f"b{n}", f"v{n}", "--", "set", "interface", f"v{n}",
                     f"ofport_request={PORT_VM}",
                     "--", "add-port", f"b{n}", f"u{n}", "--", "set", "interface", f"u{n}",
                     f"ofport_request={PORT_UP}", "--", "set", "port", f"u{n}", "qos=@noop"]
            if controller:
                # reconnect within a second of the controller's return;
                # an inactivity probe that a loaded guest cannot miss
                # (a dead controller closes the TCP connection anyway)
                args += ["--", "set-controller", f"b{n}", controller,
                         "--", "set", "controller", f"b{n}", "connection-mode=out-of-band",
                         "max_backoff=1000", "inactivity_probe=60000"]
        self.vsctl(*args)
        self.timing["bridges_s"] = time.monotonic() - t0

    def set_flowcell_seed(self, seed):
        """the kernel datapath's flowcell seed (ovs-patches 0007,
        OVS_FLOWCELL_ATTR_SEED): 0 draws each new flow's first flowcell
        path at random, anything else derives it from the flow's addresses
        and ports, so that runs repeat.  The datapath exists once a bridge
        does.  Returns None, or why it failed (an older kernel or OVS
        without the seed: the run goes on with random starts)."""
        t0 = time.monotonic()
        try:
            self._run([self.prog["ovs-dpctl"], "set-flowcell", "ovs-system", f"seed={int(seed)}"], ns=True)
            err = None
        except RuntimeError as e:
            err = str(e)
            print(f"presto: flowcell seed {seed} not set, starts stay random: {err}", flush=True)
        self.timing["flowcell_seed_s"] = time.monotonic() - t0
        return err

    def set_flowlet_gap(self, gap_us):
        """flowlet switching instead of flowcells (ovs-patches 0009,
        OVS_FLOWCELL_ATTR_GAP_US): the flowcell size is ignored and a flow
        moves to its next flowcell (the group's next bucket, i.e. tree) when
        its previous data packet is more than gap_us old; 0 is flowcells.
        Raises RuntimeError when the kernel or OVS cannot: a run labelled
        flowlets must not silently measure flowcells."""
        t0 = time.monotonic()
        self._run([self.prog["ovs-dpctl"], "set-flowcell", "ovs-system", f"gap={int(gap_us)}"], ns=True)
        self.timing["flowlet_gap_s"] = time.monotonic() - t0

    def stop(self):
        for name in ("ovs-vswitchd", "ovsdb-server"):
            pidfile = f"{self.dir}/{name}.pid"
            try:
                pid = int(open(pidfile).read().strip())
                os.kill(pid, 15)
            except (OSError, ValueError):
                continue
            for _ in range(50):
                try:
                    os.kill(pid, 0)
                except OSError:
                    break
                time.sleep(0.1)
        # the kernel datapath outlives ovs-vswitchd: delete it
        subprocess.run(ns_exec(self.fab.ns(VS)) + [self.prog["ovs-dpctl"], "del-dp", "ovs-system"],
                       capture_output=True, env=self.env)


def tree_weights(fab, src_leaf, dst_leaf, trees, spines):
    """[(tree, weight)] for traffic from src_leaf to dst_leaf
    (dcnet/controller/plan.py tree_weights over the fabric's link rates)"""
    return _plan.tree_weights(fab.link_rate, src_leaf, dst_leaf, trees, spines)


class PrestoController:
    """Presto's controller over Fabric's L2 Controller: shadow MACs per
    host per tree, every bridge's group and flow tables, and the
    reaction to a link going down or degrading (prune, then weights).
    `events` records each reaction with its stage times."""

    def __init__(self, fab, vswitch, method="flowcell", flowcell_bytes=FLOWCELL_BYTES):
        self.fab, self.vs, self.method, self.flowcell_bytes = fab, vswitch, method, flowcell_bytes
        self.l2 = fab.controller
        self.events = []
        self.groups = {}            # (src index, dst index) -> buckets

    def hosts(self):
        return sorted(self.fab.hosts.values(), key=lambda h: h.index)

    def plan(self):
        """the fabric's plan now (dcnet/controller/plan.py), its links'
        rates included"""
        return Plan(self.fab.presto_plan(method=self.method, flowcell_bytes=self.flowcell_bytes))

    def install(self):
        t0 = time.monotonic()
        hosts = self.hosts()
        self.l2.install_many([(shadow_mac(h.index, t), h.name, t) for h in hosts for t in self.l2.trees()])
        t1 = time.monotonic()
        p = self.plan()
        for src in p.hosts:
            groups = []
            for dst, b in p.groups(src).items():
                self.groups[(src["index"], dst)] = b
                groups.append(group_spec(dst, b, self.method, self.flowcell_bytes))
            flows = [ofctl_flow(f) for f in p.flows(src)]
            self.vs.ofctl("add-groups", f"b{src['index']}", "-", input="\n".join(groups) + "\n")
            self.vs.ofctl("add-flows", f"b{src['index']}", "-", input="\n".join(flows) + "\n")
        self.timing = dict(fabric_s=t1 - t0, vswitches_s=time.monotonic() - t1)

    def fabric_stages(self):
        """the switches' stages of a link change: fast failover detours the
        shadow MACs whose tree lost a link, or puts back those whose tree
        is whole again; then the fabric's other entries move.  Returns the
        times at the start, after the failover and after the fabric, and
        the detoured and restored entry counts."""
        t0 = time.monotonic()
        shadows = {shadow_mac(h.index, t) for h in self.hosts() for t in self.l2.trees()}
        detoured = self.l2.fast_failover(shadows)
        restored = self.l2.restore(shadows)
        tf = time.monotonic()
        self.l2.link_changed(pinned=shadows)
        return t0, tf, time.monotonic(), detoured, restored

    def link_changed(self, cause=""):
        """React to a link going down, up or changing rate, in the paper's
        stages (Sec. 3.3, Fig. 17): the switches' fast failover detours
        the shadow MACs whose tree lost a link (failover_s), the fabric's
        other entries move (fabric_s), then every group is recomputed and
        those that changed are rewritten (groups_s: the pruned or weighted
        stage).  Stage times from the call."""
        t0, tf, t1, detoured, restored = self.fabric_stages()
        changed, inputs = 0, []
        p = self.plan()
        for src in p.hosts:
            mods = []
            for dst, b in p.groups(src).items():
                if b != self.groups.get((src["index"], dst)) and b:
                    self.groups[(src["index"], dst)] = b
                    mods.append(group_spec(dst, b, self.method, self.flowcell_bytes))
            if mods:
                # add-groups reads "modify" lines too: one process per bridge
                inputs.append((f"b{src['index']}", "".join(f"modify {m}\n" for m in mods)))
                changed += len(mods)
        # every bridge at once
        self.vs.ofctl_many("add-groups", inputs)
        ev = dict(cause=cause, failover_s=tf - t0, fabric_s=t1 - tf, groups_s=time.monotonic() - t1,
                  failover_entries=detoured, restored=restored, groups_changed=changed, bridges=len(inputs))
        self.events.append(ev)
        return ev


CONTROLLER_PORT = 6653          # the OpenFlow controller's port in namespace PREFIX-vs


class OpenFlowPresto(PrestoController):
    """Presto with the OpenFlow controller (dcnet/controller, os-ken) as a
    process of its own in namespace PREFIX-vs: the bridges connect to it
    over TCP (tcp:127.0.0.1:CONTROLLER_PORT) and it installs their groups
    and flows.  The fabric's switches are Linux bridges, not OpenFlow
    switches: their entries stay with Fabric's L2 Controller (bridge fdb),
    and a link change reaches the controller as a report on its control
    socket (what a physical fabric's link monitor sends), after the
    fabric's own stages.  A host's uplink it sees itself (port status)."""

    def __init__(self, fab, vswitch, method="flowcell", flowcell_bytes=FLOWCELL_BYTES,
                 port=CONTROLLER_PORT):
        super().__init__(fab, vswitch, method, flowcell_bytes)
        self.port = port
        self.dir = vswitch.dir
        self.plan_path = os.path.join(self.dir, "plan.json")
        self.state_path = os.path.join(self.dir, "controller-state.json")
        self.control = os.path.join(self.dir, "controller.sock")
        self.log_path = os.path.join(self.dir, "controller.log")
        self.proc = None
        self.reported = {}          # (a, b) -> Mbit/s the controller was told

    @property
    def target(self):
        return f"tcp:127.0.0.1:{self.port}"

    def write_plan(self):
        """the plan as it stands (links' rates now), for the controller to
        start from"""
        d = self.fab.presto_plan(method=self.method, flowcell_bytes=self.flowcell_bytes)
        tmp = self.plan_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(d, f, indent=1)
        os.replace(tmp, self.plan_path)
        self.reported = {(x["a"], x["b"]): x["mbit"] for x in d["links"]}

    def start(self):
        """write the plan and start the controller (no wait)"""
        self.write_plan()
        for p in (self.control, self.state_path):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
        # dcnet from where this process has it (the venv, or the guest's
        # PYTHONPATH), os-ken from the same interpreter
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(
            ns_exec(self.fab.ns(VS)) + [sys.executable, "-m", "dcnet.controller", "--plan", self.plan_path,
                                        "--listen", f"127.0.0.1:{self.port}", "--state", self.state_path,
                                        "--control", self.control],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def stop(self):
        """stop the controller (the bridges keep their tables: fail_mode secure)"""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    close = stop

    def state(self, timeout=60.0):
        from dcnet.controller import client
        return client.state(self.control, timeout)

    def wait_synced(self, timeout=600.0, after=None, hosts=None):
        """wait until every bridge (hosts: those of these host indexes) is
        connected and its last resync committed (after: a time.time() the
        sync must be later than); returns the controller's state"""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"controller exited ({self.proc.returncode}): {self.log_tail()}")
            if os.path.exists(self.control):
                try:
                    last = self.state(timeout=30)
                except (OSError, ValueError, RuntimeError):
                    last = None
                if last and all(s["connected"] and s["synced"] and (after is None or s["last_sync"] > after)
                                for k, s in last["switches"].items() if hosts is None or int(k) in hosts):
                    return last
            time.sleep(0.5)
        raise TimeoutError(f"bridges not in sync with the controller after {timeout} s: "
                           f"{last and last['switches']}; {self.log_tail()}")

    def log_tail(self, n=2000):
        try:
            with open(self.log_path) as f:
                return f.read()[-n:]
        except OSError:
            return ""

    def install(self):
        t0 = time.monotonic()
        hosts = self.hosts()
        self.l2.install_many([(shadow_mac(h.index, t), h.name, t) for h in hosts for t in self.l2.trees()])
        t1 = time.monotonic()
        if self.proc is None:
            self.start()
        st = self.wait_synced()
        p = self.plan()
        for src in p.hosts:
            for dst, b in p.groups(src).items():
                self.groups[(src["index"], dst)] = b
        self.timing = dict(fabric_s=t1 - t0, vswitches_s=time.monotonic() - t1,
                           controller_pid=st["pid"])

    def link_changed(self, cause=""):
        """the fabric's stages as PrestoController's, then every link whose
        rate changed is reported to the controller, which modifies the
        groups and answers once every bridge has acknowledged them
        (barriers): groups_s"""
        from dcnet.controller import client
        t0, tf, t1, detoured, restored = self.fabric_stages()
        d = self.fab.presto_plan(method=self.method, flowcell_bytes=self.flowcell_bytes)
        changed, bridges, acked = 0, 0, True
        for x in d["links"]:
            key = (x["a"], x["b"])
            if self.reported.get(key) == x["mbit"]:
                continue
            ev = client.link(self.control, x["a"], x["b"], x["mbit"], timeout=300)
            self.reported[key] = x["mbit"]
            changed += ev["groups_changed"]
            bridges = max(bridges, ev["bridges"])
            acked = acked and ev.get("acked", False)
        p = Plan(d)
        for src in p.hosts:
            for dst, b in p.groups(src).items():
                if b:
                    self.groups[(src["index"], dst)] = b
        ev = dict(cause=cause, failover_s=tf - t0, fabric_s=t1 - tf, groups_s=time.monotonic() - t1,
                  failover_entries=detoured, restored=restored, groups_changed=changed, bridges=bridges,
                  acked=acked)
        self.events.append(ev)
        return ev
