"""D2TCP in the booted kernel: module autoload, the TCP_DEADLINE socket
option on IPv4 and IPv6, ECN negotiation and ss -ti state (d, the time to
the deadline, the bytes left), the paper's d = n past the deadline, and the
deadline-aware sharing of an ECN-marking bottleneck at the paper's
parameters (g = 1/16, d in [1/2, 2])."""
import errno
import json
import os
import socket
import struct
import time

import pytest

from dcnet import config
from dcnet.testbed.netlab import DLTRAFFIC, json_lines, monotonic_us, sh

from dcnet.wait import scaled, wait_until

TCP_DEADLINE = 0xD200           # out of tree: far above upstream's options
DEADLINE_FMT = "=QQII"          # struct tcp_deadline
F_SET, F_EXPIRED = 1, 2


def d2tcp_socket(family=socket.AF_INET):
    """A socket whose congestion control keeps deadlines"""
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"d2tcp")
    return s


def set_deadline(s, us, nbytes, flags=0, reserved=0):
    s.setsockopt(socket.IPPROTO_TCP, TCP_DEADLINE, struct.pack(DEADLINE_FMT, us, nbytes, flags, reserved))


def get_deadline(s):
    return struct.unpack(DEADLINE_FMT, s.getsockopt(socket.IPPROTO_TCP, TCP_DEADLINE, 24))


def loaded_modules():
    with open("/proc/modules") as f:
        return {line.split()[0] for line in f}


def test_module_autoloads_from_sysctl():
    sh("rmmod tcp_d2tcp 2>/dev/null; true")
    assert "tcp_d2tcp" not in loaded_modules()
    old = sh("sysctl -n net.ipv4.tcp_congestion_control").strip()
    try:
        sh("sysctl -qw net.ipv4.tcp_congestion_control=d2tcp")
        assert "tcp_d2tcp" in loaded_modules()
        assert sh("sysctl -n net.ipv4.tcp_congestion_control").strip() == "d2tcp"
        assert "d2tcp" in sh("sysctl -n net.ipv4.tcp_available_congestion_control").split()
    finally:
        sh(f"sysctl -qw net.ipv4.tcp_congestion_control={old}")


def test_module_autoloads_from_socket_option():
    sh("rmmod tcp_d2tcp 2>/dev/null; true")
    s = socket.socket()
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"d2tcp")
    assert s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0") == b"d2tcp"
    assert "tcp_d2tcp" in loaded_modules()
    s.close()


@pytest.mark.parametrize("family", [socket.AF_INET, socket.AF_INET6])
def test_deadline_option_roundtrip(family):
    s = d2tcp_socket(family)
    assert get_deadline(s) == (0, 0, 0, 0)
    set_deadline(s, 100000, 1 << 20)
    left, nbytes, flags, _ = get_deadline(s)
    assert flags == F_SET
    assert 0 < left <= 100000
    assert nbytes == 1 << 20
    # the 100 ms pass (at least: the sleep), then the deadline reads expired
    time.sleep(0.1)
    wait_until(lambda: get_deadline(s)[2] & F_EXPIRED, 5, "the 100 ms deadline expired")
    left, nbytes, flags, _ = get_deadline(s)
    assert (left, flags) == (0, F_SET | F_EXPIRED)
    set_deadline(s, 0, 0)
    assert get_deadline(s) == (0, 0, 0, 0)
    s.close()


@pytest.mark.parametrize("family", [socket.AF_INET, socket.AF_INET6])
def test_deadline_option_rejects_nonsense(family):
    s = d2tcp_socket(family)
    bad = [
        dict(us=1000, nbytes=0),                 # deadline without size
        dict(us=0, nbytes=1000),                 # size without deadline
        dict(us=3600 * 10**6 + 1, nbytes=1),     # beyond one hour
        dict(us=1000, nbytes=(1 << 48) + 1),     # beyond 2^48 bytes
        dict(us=1000, nbytes=1, flags=1),        # flags are output only
        dict(us=1000, nbytes=1, reserved=7),
    ]
    for kw in bad:
        with pytest.raises(OSError) as e:
            set_deadline(s, kw["us"], kw["nbytes"], kw.get("flags", 0), kw.get("reserved", 0))
        assert e.value.errno == errno.EINVAL, kw
    # shorter than the first version (TCP_DEADLINE_SIZE_VER0, 24 bytes)
    for short in (b"", b"\0" * 8, b"\0" * 23):
        with pytest.raises(OSError) as e:
            s.setsockopt(socket.IPPROTO_TCP, TCP_DEADLINE, short)
        assert e.value.errno == errno.EINVAL
    # longer than the struct: only with a zero tail (room to grow), else
    # E2BIG as copy_struct_from_user() answers
    good = struct.pack(DEADLINE_FMT, 10**6, 1000, 0, 0)
    for tail in (b"\0" * 7 + b"\1", b"\1", b"\0" * 4095 + b"\1"):
        with pytest.raises(OSError) as e:
            s.setsockopt(socket.IPPROTO_TCP, TCP_DEADLINE, good + tail)
        assert e.value.errno == errno.E2BIG, len(tail)
    # nothing was set by the failed calls
    assert get_deadline(s) == (0, 0, 0, 0)
    s.setsockopt(socket.IPPROTO_TCP, TCP_DEADLINE, good + b"\0" * 8)
    assert get_deadline(s)[1:3] == (1000, F_SET)
    s.close()


def test_deadline_option_struct_can_grow():
    """getsockopt() with a shorter buffer (an older binary once the struct
    grows) gets the first fields, as TCP_INFO does; a longer one gets the
    struct and its length; setsockopt() takes a longer zero-tailed struct
    and the exact one alike"""
    s = d2tcp_socket()
    set_deadline(s, 10**6, 4096)
    assert len(s.getsockopt(socket.IPPROTO_TCP, TCP_DEADLINE, 24)) == 24
    for n in (4, 8, 16, 20):
        assert len(s.getsockopt(socket.IPPROTO_TCP, TCP_DEADLINE, n)) == n
    assert struct.unpack("=QQ", s.getsockopt(socket.IPPROTO_TCP, TCP_DEADLINE, 16))[1] == 4096
    assert struct.unpack("=QQI", s.getsockopt(socket.IPPROTO_TCP, TCP_DEADLINE, 20))[2] == F_SET
    assert len(s.getsockopt(socket.IPPROTO_TCP, TCP_DEADLINE, 64)) == 24
    s.setsockopt(socket.IPPROTO_TCP, TCP_DEADLINE, struct.pack(DEADLINE_FMT, 10**6, 2048, 0, 0)
                 + b"\0" * 40)
    assert get_deadline(s)[1] == 2048
    s.close()


def test_deadline_option_number_is_out_of_tree():
    """TCP_DEADLINE is 0xd200, far from the numbers upstream hands out in
    order: 48, its old number, is no option here"""
    s = d2tcp_socket()
    with pytest.raises(OSError) as e:
        s.setsockopt(socket.IPPROTO_TCP, 48, struct.pack(DEADLINE_FMT, 10**6, 1000, 0, 0))
    assert e.value.errno == errno.ENOPROTOOPT
    with pytest.raises(OSError) as e:
        s.getsockopt(socket.IPPROTO_TCP, 48, 24)
    assert e.value.errno == errno.ENOPROTOOPT
    set_deadline(s, 10**6, 1000)
    assert get_deadline(s)[1:3] == (1000, F_SET)
    s.close()


POLICY = "net.ipv4.tcp_deadline_policy"
NOBODY = 65534


def refused_count():
    """TcpExtTCPDeadlineRefused of this namespace, as nstat shows it"""
    with open("/proc/net/netstat") as f:
        lines = [line.split() for line in f if line.startswith("TcpExt:")]
    return int(dict(zip(lines[0][1:], lines[1][1:]))["TCPDeadlineRefused"])


def set_deadline_as_nobody(s, us, nbytes):
    """setsockopt(TCP_DEADLINE) on s from a child that is uid nobody, so it
    holds no capability (CAP_NET_ADMIN included); its errno, 0 if set"""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            with open("/proc/self/status") as f:
                eff = [line for line in f if line.startswith("CapEff:")][0]
            assert int(eff.split()[1], 16) == 0, eff
            try:
                set_deadline(s, us, nbytes)
            except OSError as e:
                code = e.errno
        except BaseException:
            code = 255
        os.write(w, bytes([code]))
        os._exit(0)
    os.close(w)
    try:
        got = os.read(r, 1)
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    assert got and got[0] != 255, "the child could not drop its privileges"
    return got[0]


@pytest.fixture
def deadline_policy():
    old = sh(f"sysctl -n {POLICY}").strip()
    yield
    sh(f"sysctl -qw {POLICY}={old}")


def test_deadline_policy_default_and_range(deadline_policy):
    """Setting a deadline needs CAP_NET_ADMIN unless the operator says
    otherwise; the sysctl takes 0, 1 and 2 only"""
    assert sh(f"sysctl -n {POLICY}").strip() == "1"
    for bad in ("3", "-1", "255", "x"):
        with pytest.raises(Exception):
            sh(f"sysctl -qw {POLICY}={bad}")
        assert sh(f"sysctl -n {POLICY}").strip() == "1", bad
    for ok in ("0", "2", "1"):
        sh(f"sysctl -qw {POLICY}={ok}")
        assert sh(f"sysctl -n {POLICY}").strip() == ok


@pytest.mark.parametrize("family", [socket.AF_INET, socket.AF_INET6])
def test_deadline_policy_who_may_set(deadline_policy, family):
    """1: an unprivileged process is refused with EPERM and counted, root
    is not; 2: anyone; 0: nobody, root included.  Clearing is always
    allowed, and a refused set leaves the socket as it was."""
    s = d2tcp_socket(family)
    sh(f"sysctl -qw {POLICY}=1")
    before = refused_count()
    assert set_deadline_as_nobody(s, 1, 1 << 48) == errno.EPERM
    assert refused_count() == before + 1
    assert get_deadline(s) == (0, 0, 0, 0)
    assert set_deadline_as_nobody(s, 0, 0) == 0          # clearing
    set_deadline(s, 10**6, 1000)                         # root may
    assert get_deadline(s)[2] == F_SET
    assert refused_count() == before + 1

    sh(f"sysctl -qw {POLICY}=2")
    assert set_deadline_as_nobody(s, 10**6, 2000) == 0
    assert get_deadline(s)[1:3] == (2000, F_SET)
    assert refused_count() == before + 1

    sh(f"sysctl -qw {POLICY}=0")
    with pytest.raises(OSError) as e:
        set_deadline(s, 10**6, 3000)
    assert e.value.errno == errno.EPERM
    assert set_deadline_as_nobody(s, 10**6, 3000) == errno.EPERM
    assert refused_count() == before + 3
    assert get_deadline(s)[1] == 2000                    # unchanged
    set_deadline(s, 0, 0)
    assert get_deadline(s) == (0, 0, 0, 0)
    s.close()


def test_deadline_policy_is_per_namespace(deadline_policy):
    """The policy belongs to the network namespace: a new one starts at
    the default (1) whatever the host's says, and root may set deadlines
    on its sockets while the host's policy is 0"""
    d2tcp_socket().close()                  # the module is in
    sh(f"sysctl -qw {POLICY}=0")
    script = (
        "import socket, struct; "
        "s = socket.socket(); "
        "s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b'd2tcp'); "
        f"s.setsockopt(socket.IPPROTO_TCP, {TCP_DEADLINE}, struct.pack('{DEADLINE_FMT}', 10**6, 1000, 0, 0)); "
        f"print(open('/proc/sys/{POLICY.replace('.', '/')}').read().strip())"
    )
    out = sh(f"unshare -n /usr/bin/python3 -c \"{script}\"")
    assert out.strip() == "1"
    assert sh(f"sysctl -n {POLICY}").strip() == "0"


@pytest.mark.parametrize("cc", [b"cubic", b"dctcp"])
def test_deadline_needs_a_deadline_aware_cc(cc):
    """The deadline lives in the congestion control's private area: other
    congestion controls refuse it, and a change of congestion control
    clears it."""
    s = socket.socket()
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc)
    with pytest.raises(OSError) as e:
        set_deadline(s, 10**6, 1000)
    assert e.value.errno == errno.EOPNOTSUPP
    set_deadline(s, 0, 0)                       # clearing is harmless
    assert get_deadline(s) == (0, 0, 0, 0)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"d2tcp")
    set_deadline(s, 10**6, 1000)
    assert get_deadline(s)[2] == F_SET
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc)
    assert get_deadline(s) == (0, 0, 0, 0)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"d2tcp")
    assert get_deadline(s) == (0, 0, 0, 0)
    s.close()


def test_deadline_not_inherited_by_accepted_socket():
    ls = d2tcp_socket()
    ls.bind(("127.0.0.1", 0))
    set_deadline(ls, 60 * 10**6, 4096)
    ls.listen(1)
    c = socket.create_connection(ls.getsockname())
    a, _ = ls.accept()
    assert get_deadline(a) == (0, 0, 0, 0)
    assert get_deadline(ls)[2] == F_SET
    for s in (a, c, ls):
        s.close()


def test_deadline_counts_acked_bytes():
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    c = d2tcp_socket()
    c.connect(ls.getsockname())
    a, _ = ls.accept()
    set_deadline(c, 10**7, 100000)
    c.sendall(b"x" * 30000)
    got = 0
    while got < 30000:
        got += len(a.recv(65536))
    # the ACKs arrive: 30000 of the 100000 bytes count as delivered
    wait_until(lambda: get_deadline(c)[1] <= 70000, 5, "the ACKs of 30000 bytes arrived")
    left, nbytes, flags, _ = get_deadline(c)
    assert flags == F_SET and nbytes == 70000
    for s in (a, c, ls):
        s.close()


def ss_until(lab, host, want, port=5001, timeout=5):
    """ss -tienH for the flow to port until every string of want shows
    (or timeout, stretched by DCNET_TIMEOUT_SCALE, passed: the caller's
    assertion says what is missing)"""
    end = time.monotonic() + scaled(timeout)
    while True:
        out = sh(f"ss -tienH 'dport = :{port}'", ns=lab.ns(host))
        if all(w in out for w in want) or time.monotonic() > end:
            return out
        time.sleep(0.1)


@pytest.mark.parametrize("v6", [False, True])
def test_ecn_negotiated_and_state_in_ss(lab_factory, v6):
    """ss -ti shows D2TCP's own state: DCTCP's alpha, then d, the time to
    the deadline and the bytes left (the project's ss, iproute2-patches/)"""
    lab = lab_factory(["h1", "h3"], prefix="e")
    lab.server("h3", 5001, v6=v6, cc="d2tcp")
    dst = lab.ip("h3", v6)
    p = lab.spawn("h1", [DLTRAFFIC, "flow", "-c", dst, "-p", "5001", "--bytes", "40M",
                         "--cc", "d2tcp", "--id", "ecn", "--deadline-us", "3000000000"]
                  + (["-6"] if v6 else []))
    ss = ss_until(lab, "h1", ["d2tcp", "bytes_left:"])
    p.terminate()
    p.wait()
    assert "ecn" in ss.split(), ss
    assert "d2tcp:(ce_state:" in ss and "alpha:" in ss, ss
    fields = dict(kv.split(":", 1) for kv in ss.split("d2tcp:(")[1].split(")")[0].split(","))
    # 40 MB due in 50 minutes: far from the deadline, d at its floor 1/2
    assert float(fields["d"]) == 0.5, ss
    assert 0 < float(fields["deadline"].removesuffix("ms")) <= 3000000, ss
    assert 0 < int(fields["bytes_left"]) <= 40 * 2**20 + 64, ss


def test_past_deadline_takes_the_cap(lab_factory):
    """The paper's d = Tc / D capped at n: as D goes to 0 d goes to n = 2,
    and a flow past its deadline keeps d = 2 (not DCTCP's d = 1)."""
    lab = lab_factory(["h1", "h3"], prefix="l")
    lab.server("h3", 5001, cc="d2tcp")
    p = lab.spawn("h1", [DLTRAFFIC, "flow", "-c", lab.ip("h3"), "-p", "5001", "--bytes", "400M",
                         "--cc", "d2tcp", "--id", "late", "--deadline-us", "300000"])
    ss = ss_until(lab, "h1", ["deadline:passed"])
    p.terminate()
    p.wait()
    assert "d2tcp:(ce_state:" in ss and "deadline:passed" in ss, ss
    fields = dict(kv.split(":", 1) for kv in ss.split("d2tcp:(")[1].split(")")[0].split(","))
    assert float(fields["d"]) == 2.0, ss
    assert int(fields["bytes_left"]) > 0, ss


def test_falls_back_without_ecn(lab_factory):
    """A peer that refuses ECN gets Reno behaviour, as with DCTCP."""
    lab = lab_factory(["h1", "h3"], prefix="n")
    sh("sysctl -qw net.ipv4.tcp_ecn=0", ns=lab.ns("h3"))
    lab.server("h3", 5001)      # cubic listener, ECN off: no ECN
    p = lab.spawn("h1", [DLTRAFFIC, "flow", "-c", lab.ip("h3"), "-p", "5001", "--bytes", "40M",
                         "--cc", "d2tcp", "--id", "noecn"])
    ss = ss_until(lab, "h1", ["d2tcp", "fallback_mode"])
    p.terminate()
    p.wait()
    assert "d2tcp" in ss and "d2tcp:fallback_mode" in ss, ss


# The debug kernel (KASAN, lockdep) under TCG moves about 5 Mbit/s per TCP
# flow between namespaces (measured: 5 MB in 7.3 s with cubic, 8.1 s with
# d2tcp, no qdisc).  The bottleneck must sit well below that, or the queue
# never builds and nothing is marked: 2 Mbit/s, marking above 20 packets
# (120 ms at that rate; the guest's own RTT is 10-50 ms of CPU queueing).
# Flows are long enough (10 s together) for some tens of marking epochs:
# DCTCP's alpha needs them, and so does any share worth measuring.
RATE_MBIT = 2
LINK_BOUND = 0.75           # of RATE_MBIT: below it the guest, not the link, is the bottleneck
K_BYTES = 30000
FLOW_BYTES = 1_250_000


def two_flows(lab, deadlines, cc="d2tcp", v6=False, tag="", start_server=True):
    """Two equal flows h1->h3 and h2->h3 through the marking bottleneck,
    started together; returns their flow records by id and the samples
    (every 100 ms: bytes acked, cwnd, srtt, alpha) by id."""
    if start_server:
        lab.server("h3", 5001, v6=v6, cc=cc)
    start = monotonic_us() + 1_000_000
    procs = []
    for name, dl in zip(("h1", "h2"), deadlines):
        args = [DLTRAFFIC, "flow", "-c", lab.ip("h3", v6), "-p", "5001", "--bytes", str(FLOW_BYTES),
                "--cc", cc, "--id", name, "--start-at-us", str(start), "--sample-ms", "100"]
        if dl:
            args += ["--deadline-us", str(dl)]
        if v6:
            args.append("-6")
        procs.append(lab.spawn(name, args))
    recs, samples = {}, []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        for r in json_lines(out):
            if r["type"] == "flow":
                recs[r["id"]] = r
            elif r["type"] == "sample":
                samples.append(r)
    # keep the time series (bytes, cwnd, srtt, alpha) for a failure's post mortem
    name = os.environ.get("PYTEST_CURRENT_TEST", "two_flows").split(" ")[0]
    name = "".join(c if c.isalnum() else "_" for c in name.split("::")[-1])
    with open(os.path.join(config.get("DCNET_OUT"), f"{name}{tag}.json"), "w") as f:
        json.dump(dict(flows=recs, samples=samples, qdisc=lab.qdisc_stats("h3")), f)
    by_id = {}
    for r in sorted(samples, key=lambda r: r["t_us"]):
        by_id.setdefault(r["id"], []).append(r)
    return recs, by_id


def marking_lab(lab_factory, prefix, k_bytes=K_BYTES):
    lab = lab_factory(["h1", "h2", "h3"], prefix=prefix)
    lab.bottleneck("h3", RATE_MBIT, k_bytes=k_bytes)
    return lab


def marks(lab):
    for q in lab.qdisc_stats("h3"):
        if q["kind"] == "red":
            return q.get("marked", 0)
    return 0


def acked_at(samples, t_us, rec):
    """Bytes acked t_us after the flow started: interpolated between the
    samples around it (a sampler starved of CPU leaves gaps of seconds),
    and all of them from the flow's completion on."""
    if t_us >= rec["fct_us"]:
        return rec["bytes"]
    prev_t, prev_b = 0, 0
    for s in samples:
        if s["t_us"] >= t_us:
            span = s["t_us"] - prev_t
            frac = (t_us - prev_t) / span if span else 1.0
            return prev_b + frac * (s["bytes_acked"] - prev_b)
        prev_t, prev_b = s["t_us"], s["bytes_acked"]
    # past the last sample: towards completion
    span = rec["fct_us"] - prev_t
    frac = (t_us - prev_t) / span if span else 1.0
    return prev_b + frac * (rec["bytes"] - prev_b)


def share_while_both_run(recs, samples, first="h1", second="h2", until_us=None):
    """first's share of the bytes both flows got acked while both ran (and
    until until_us, if given), start-up (the first 30% of that time)
    excluded."""
    end = min(recs[first]["fct_us"], recs[second]["fct_us"], until_us or 1 << 62)
    begin = 0.3 * end
    a = acked_at(samples[first], end, recs[first]) - acked_at(samples[first], begin, recs[first])
    b = acked_at(samples[second], end, recs[second]) - acked_at(samples[second], begin, recs[second])
    assert a + b > 0, "no samples while both flows ran"
    return a / (a + b)


def both_mbit(recs, samples):
    """Mbit/s the two flows moved together while both ran."""
    end = min(recs["h1"]["fct_us"], recs["h2"]["fct_us"])
    return sum(acked_at(samples[h], end, recs[h]) for h in ("h1", "h2")) * 8 / end


# IPv4 and IPv6 (make check takes about 11 minutes since the guest's
# toolbox; DCNET_D2TCP_V6=0 leaves the IPv6 runs out).
V6_SHARE = [False, True] if config.get("DCNET_D2TCP_V6") else [False]


@pytest.mark.parametrize("v6", V6_SHARE)
def test_equal_share_without_deadlines(lab_factory, v6):
    lab = marking_lab(lab_factory, "f6" if v6 else "f4")
    recs, samples = two_flows(lab, [0, 0], v6=v6)
    mbit = both_mbit(recs, samples)
    if not marks(lab) and mbit < LINK_BOUND * RATE_MBIT:
        # a guest starved of CPU below the link's rate: no queue, no marks,
        # and nothing about the marking to judge (as in the test below)
        pytest.skip(f"the guest's CPU, not the link, set the pace: {mbit:.2f} of {RATE_MBIT} Mbit/s")
    assert marks(lab) > 0, "the bottleneck never marked: no congestion to share"
    share = share_while_both_run(recs, samples)
    # measured 0.52-0.61 for h1 under TCG: the first flow to start gains
    assert 0.3 < share < 0.7, (share, recs)


@pytest.mark.parametrize("v6", V6_SHARE)
def test_nearer_deadline_gets_more(lab_factory, v6):
    lab = marking_lab(lab_factory, "d6" if v6 else "d4")
    # The paper's parameters, nothing changed: g = 1/16, alpha starting at
    # 1, d in [1/2, 2].  Alone at 2 Mbit/s a flow needs 5 s; at half the
    # link, 10 s.  The near flow has 6 s: d = Tc / D starts above 2, and
    # past its deadline it stays at the cap, 2 (the paper's d as D -> 0).
    # The far one has 120 s: d sits at its floor of 1/2.  With alpha around
    # 0.3 the near flow cuts about alpha^2 / 2 = 0.05 of its window per
    # marked window, the far one alpha^(1/2) / 2 = 0.27.  The share is
    # judged over the whole time both flows run, the first 30% (alpha still
    # near 1, where 1^d = 1 and every flow halves) excluded.
    # The guest favours whichever flow starts first (equal-share runs:
    # 0.49-0.61) and, starved of CPU, is sometimes the bottleneck itself,
    # so the experiment runs four times, the roles swapped every other
    # run, and the near flow's mean share is judged (history in
    # docs/d2tcp.md).
    # A run says something about the marking only when the link, not the
    # guest's CPU, set the pace: the two flows together moved at least
    # LINK_BOUND of the link's rate while both ran. On a loaded host a
    # real-time TCG guest falls below that (seen: under 1 of 2 Mbit/s),
    # and then the first flow to start wins whatever d says. Such runs are
    # printed, not judged; the deadline's effect on d is asserted by
    # test_past_deadline_takes_the_cap and the share in virtual time by
    # make bench-d2tcp.
    near, far = 6_000_000, 120_000_000
    shares, runs = [], []
    for i in range(4):
        swapped = i % 2 == 1
        recs, samples = two_flows(lab, [far, near] if swapped else [near, far], v6=v6, tag=f"_{i}",
                                   start_server=i == 0)
        first, second = ("h2", "h1") if swapped else ("h1", "h2")
        share = share_while_both_run(recs, samples, first, second)
        both = both_mbit(recs, samples)
        runs.append(dict(share=round(share, 3), mbit=round(both, 2),
                         fct_s=(recs[first]["fct_us"] / 1e6, recs[second]["fct_us"] / 1e6)))
        if both >= LINK_BOUND * RATE_MBIT:
            shares.append(share)
    print(f"runs (near flow's share, Mbit/s of {RATE_MBIT} while both ran):", runs)
    if len(shares) < 2:
        pytest.skip(f"the guest's CPU, not the link, set the pace in {4 - len(shares)} of 4 runs: {runs}")
    assert marks(lab) > 0
    assert sum(shares) / len(shares) > 0.55, (shares, runs)
