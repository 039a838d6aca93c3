"""Small helpers for guest tests: namespaces, veth links, the traffic tool.

Everything here runs inside the virtme-ng guest as root.
"""
import json
import os
import shlex
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DLTRAFFIC = os.path.join(ROOT, "testbed", "tools", "dltraffic")


def sh(cmd, check=True, ns=None, capture=True, timeout=120):
    """Run a shell command (in namespace ns), return its stdout."""
    if ns:
        cmd = f"ip netns exec {ns} sh -c {shlex.quote(cmd)}"
    p = subprocess.run(cmd, shell=True, text=True, timeout=timeout,
                       stdout=subprocess.PIPE if capture else None,
                       stderr=subprocess.PIPE if capture else None)
    if check and p.returncode != 0:
        raise RuntimeError(f"{cmd!r} failed ({p.returncode}): {p.stderr}")
    return p.stdout if capture else ""


class Lab:
    """Hosts (network namespaces) joined by a router namespace "sw".

    host i gets 10.0.i.1/24 and fd00:i::1/64 on its veth to sw, which has
    10.0.i.254 and fd00:i::fe.  Segmentation offloads are off on every
    link so that qdiscs see MTU-sized packets, as a switch port would.
    """

    def __init__(self, names, prefix="t"):
        self.prefix = prefix
        self.hosts = {}
        self.sw = f"{prefix}sw"
        self.procs = []
        sh(f"ip netns add {self.sw}")
        sh("sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1", ns=self.sw)
        sh("ip link set lo up", ns=self.sw)
        for i, name in enumerate(names, start=1):
            ns = f"{prefix}{name}"
            self.hosts[name] = (ns, i)
            sh(f"ip netns add {ns}")
            sh(f"ip link add eth0 netns {ns} type veth peer name {name} netns {self.sw}")
            sh(f"ip link set lo up; ip link set eth0 up;"
               f" ip addr add 10.0.{i}.1/24 dev eth0; ip addr add fd00:{i}::1/64 dev eth0 nodad;"
               f" ip route add default via 10.0.{i}.254; ip -6 route add default via fd00:{i}::fe;"
               f" ethtool -K eth0 tso off gso off gro off >/dev/null 2>&1; true", ns=ns)
            sh(f"ip link set {name} up; ip addr add 10.0.{i}.254/24 dev {name};"
               f" ip addr add fd00:{i}::fe/64 dev {name} nodad;"
               f" ethtool -K {name} tso off gso off gro off >/dev/null 2>&1; true", ns=self.sw)

    def ns(self, name):
        return self.hosts[name][0]

    def ip(self, name, v6=False):
        i = self.hosts[name][1]
        return f"fd00:{i}::1" if v6 else f"10.0.{i}.1"

    def bottleneck(self, name, rate_mbit, k_bytes=30000, limit=400000):
        """HTB at rate_mbit on sw's port towards host name, RED marking CE
        above k_bytes (min = K, max = K + 1 packet, probability 1)."""
        dev = name
        sh(f"tc qdisc add dev {dev} root handle 1: htb default 1", ns=self.sw)
        sh(f"tc class add dev {dev} parent 1: classid 1:1 htb rate {rate_mbit}mbit ceil {rate_mbit}mbit", ns=self.sw)
        burst = k_bytes // 1500 + 1
        sh(f"tc qdisc add dev {dev} parent 1:1 handle 10: red limit {limit} min {k_bytes}"
           f" max {k_bytes + 1500} avpkt 1500 burst {burst} probability 1.0 ecn"
           f" bandwidth {rate_mbit}mbit", ns=self.sw)

    def qdisc_stats(self, name):
        return json.loads(sh(f"tc -s -j qdisc show dev {name}", ns=self.sw))

    def spawn(self, name, args, **kw):
        p = subprocess.Popen(["ip", "netns", "exec", self.ns(name)] + args,
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
        # wait until it listens
        for _ in range(100):
            out = sh(f"ss -ltnH 'sport = :{port}'", ns=self.ns(name))
            if out.strip():
                return p
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
        for ns, _ in self.hosts.values():
            sh(f"ip netns del {ns}", check=False)
        sh(f"ip netns del {self.sw}", check=False)


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


def sockperf_rtts(path):
    """Sorted round-trip times (us) from a sockperf --full-log file, which
    it then removes; None when it holds none.  sockperf logs the half
    round trip ("latency")."""
    rtts = []
    try:
        with open(path) as f:
            for line in f:
                parts = line.split(",")
                if len(parts) == 4 and parts[0].strip().isdigit():
                    rtts.append(2 * float(parts[3]))
        os.unlink(path)
    except (OSError, ValueError):
        return None
    return sorted(rtts) or None
