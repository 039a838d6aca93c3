"""Small helpers for guest tests: namespaces, veth links, the traffic tool.

Everything here runs inside the virtme-ng guest as root.
"""
import json
import os
import shlex
import subprocess
import time

from dcnet.testbed.ns import ETHTOOL_SGRO, ETHTOOL_SGSO, ETHTOOL_STSO, batch, ethtool_set, netns, ns_exec, sysctl

from dcnet import config
from dcnet import ROOT

DLTRAFFIC = os.path.join(ROOT, "testbed", "tools", "dltraffic")


def sh(cmd, check=True, ns=None, capture=True, timeout=120):
    """Run a shell command (in namespace ns), return its stdout."""
    # "sh" through PATH, not shell=True's /bin/sh: the guest's toolbox
    # (dcnet.warm) comes first there
    argv = (ns_exec(ns) if ns else []) + ["sh", "-c", cmd]
    # a guest-time budget: in virtual time a wait on the host (9p) can
    # use it up when the host is loaded; DCNET_TIMEOUT_SCALE stretches it
    # as it stretches the boot's (dcnet/hostrun.py)
    timeout *= config.get("DCNET_TIMEOUT_SCALE")
    p = subprocess.run(argv, text=True, timeout=timeout,
                       stdout=subprocess.PIPE if capture else None,
                       stderr=subprocess.PIPE if capture else None)
    if check and p.returncode != 0:
        raise RuntimeError(f"{cmd!r} failed ({p.returncode}): {p.stderr}")
    return p.stdout if capture else ""


def tc_binary():
    """the project's tc (iproute2-patches/; the toolbox's copy in a guest
    that installed one), else the system's"""
    return config.get("DCNET_TC")


def tc(args, ns, check=True):
    """tc ARGS in namespace ns; its stdout"""
    return sh(f"{tc_binary()} {args}", ns=ns, check=check)


def tc_fails(args, ns):
    """Run tc, expect it to fail; return its stderr."""
    p = subprocess.run([tc_binary(), "-n", ns] + shlex.split(args), capture_output=True, text=True)
    assert p.returncode != 0, f"tc {args} succeeded"
    return p.stderr


class Lab:
    """Hosts (network namespaces) joined by a router namespace "sw".

    host i gets 10.0.i.1/24 and fd00:i::1/64 on its veth to sw, which has
    10.0.i.254 and fd00:i::fe.  Segmentation offloads are off on every
    link so that qdiscs see MTU-sized packets, as a switch port would.
    """

    def __init__(self, names, prefix="t"):
        # Built as dcnet/testbed/fabric.py builds the Clos: netns(2) for sysctls
        # and ethtool, `ip -batch` for links and addresses, so a lab costs
        # a handful of process starts instead of one or two per command
        # (each is 0.3-1 s in the debug guest).
        self.prefix = prefix
        self.hosts = {}
        self.sw = f"{prefix}sw"
        self.procs = []
        for i, name in enumerate(names, start=1):
            self.hosts[name] = (f"{prefix}{name}", i)
        batch("ip", [f"netns add {self.sw}"] + [f"netns add {ns}" for ns, _ in self.hosts.values()])
        batch("ip", [f"link add eth0 netns {ns} type veth peer name {name} netns {self.sw}"
                     for name, (ns, _i) in self.hosts.items()])
        with netns(self.sw):
            sysctl("net.ipv4.ip_forward", 1)
            sysctl("net.ipv6.conf.all.forwarding", 1)
        L = ["link set lo up"]
        for name, (ns, i) in self.hosts.items():
            L += [f"link set dev {name} up", f"addr add 10.0.{i}.254/24 dev {name}",
                  f"addr add fd00:{i}::fe/64 dev {name} nodad"]
        batch("ip", L, ns=self.sw)
        for name, (ns, i) in self.hosts.items():
            batch("ip", ["link set lo up", "link set eth0 up", f"addr add 10.0.{i}.1/24 dev eth0",
                         f"addr add fd00:{i}::1/64 dev eth0 nodad",
                         f"route add default via 10.0.{i}.254", f"route add default via fd00:{i}::fe"],
                  ns=ns)
        # segmentation offloads off on every link: qdiscs see MTU-sized
        # packets, as a switch port would
        for ns, devs in [(self.sw, list(self.hosts))] + [(ns, ["eth0"]) for ns, _ in self.hosts.values()]:
            with netns(ns):
                for dev in devs:
                    for cmd in (ETHTOOL_STSO, ETHTOOL_SGSO, ETHTOOL_SGRO):
                        try:
                            ethtool_set(dev, cmd, False)
                        except OSError:
                            pass

    def ns(self, name):
        return self.hosts[name][0]

    def ip(self, name, v6=False):
        i = self.hosts[name][1]
        return f"fd00:{i}::1" if v6 else f"10.0.{i}.1"

    def bottleneck(self, name, rate_mbit, k_bytes=30000, limit=400000):
        """HTB at rate_mbit on sw's port towards host name, RED marking CE
        above k_bytes (min = K, max = K + 1 packet, probability 1)."""
        dev = name
        burst = k_bytes // 1500 + 1
        batch("tc", [f"qdisc add dev {dev} root handle 1: htb default 1",
                     f"class add dev {dev} parent 1: classid 1:1 htb rate {rate_mbit}mbit ceil {rate_mbit}mbit",
                     f"qdisc add dev {dev} parent 1:1 handle 10: red limit {limit} min {k_bytes}"
                     f" max {k_bytes + 1500} avpkt 1500 burst {burst} probability 1.0 ecn"
                     f" bandwidth {rate_mbit}mbit"], ns=self.sw)

    def qdisc_stats(self, name):
        return json.loads(sh(f"tc -s -j qdisc show dev {name}", ns=self.sw))

    def spawn(self, name, args, **kw):
        p = subprocess.Popen(ns_exec(self.ns(name)) + args,
                             **{"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, **kw})
        self.procs.append(p)
        return p

    def server(self, name, port=5001, v6=False, cc=None):
        """A dltraffic server.  Receivers of DCTCP/D2TCP flows must run the
        same kind of congestion control: Linux accepts ECN on a SYN that is
        itself ECT (as DCTCP senders send it) only when the listener's
        congestion control needs ECN."""
        args = [DLTRAFFIC, "server", "-p", str(port)]
        if v6:
            args.append("-6")
        if cc:
            args += ["--cc", cc]
        p = self.spawn(name, args)
        # wait until it listens: on the event, not on a clock budget (in
        # virtual time a process start over 9p moves the guest's clock on)
        for _ in range(600):
            out = subprocess.run(["ss", "-N", self.ns(name), "-ltnH", f"sport = :{port}"],
                                 capture_output=True, text=True).stdout
            if out.strip():
                return p
            if p.poll() is not None:
                raise RuntimeError(f"dltraffic server exited ({p.returncode}): {p.stderr.read()[-400:]}")
            time.sleep(0.05)
        raise RuntimeError("dltraffic server did not start")

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        batch("ip", [f"netns del {ns}" for ns, _ in self.hosts.values()] + [f"netns del {self.sw}"],
              force=True)


def allow_congestion_controls(names):
    """load each named congestion control and add it to
    tcp_allowed_congestion_control: a namespace may make only an allowed
    algorithm its default (EPERM otherwise)"""
    path = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"
    with open(path) as f:
        allowed = f.read().split()
    want = [n for n in sorted(set(names)) if n not in allowed]
    for n in want:
        subprocess.run(["modprobe", f"tcp_{n}"], stderr=subprocess.DEVNULL)
    if want:
        with open(path, "w") as f:
            f.write(" ".join(allowed + want))


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def monotonic_us():
    return int(time.clock_gettime(time.CLOCK_MONOTONIC) * 1e6)


def sockperf_samples(path):
    """The samples of a sockperf --full-log file, which it then removes:
    (send time in s, round-trip time in us) in the order logged; None
    when it holds none.  sockperf logs "packet, txTime(sec), rxTime(sec),
    latency(usec)", the latency being half the round trip."""
    out = []
    try:
        with open(path) as f:
            for line in f:
                parts = line.split(",")
                if len(parts) == 4 and parts[0].strip().isdigit():
                    out.append((float(parts[1]), 2 * float(parts[3])))
        os.unlink(path)
    except (OSError, ValueError):
        return None
    return out or None


def sockperf_rtts(path):
    """Sorted round-trip times (us) from a sockperf --full-log file, which
    it then removes; None when it holds none."""
    samples = sockperf_samples(path)
    return sorted(r for _t, r in samples) if samples else None
