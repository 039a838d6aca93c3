"""The VM runner's splat detector: real splats fail a run, the debug
kernel's normal boot messages do not."""
from dcnet.host.vmrun import find_splats, guest_path

BENIGN = """\
[    0.000000] KernelAddressSanitizer initialized (generic)
[    0.120000] RCU lockdep checking is enabled.
[    0.130000] Lock dependency validator: Copyright (c) 2006 Red Hat, Inc., Ingo Molnar
[    0.140000] Warning: unable to open an initial console.
[    1.000000] KTAP version 1
[    1.000001]     ok 1 d2tcp_gamma_reference
"""

SPLATS = [
    "[   12.3] BUG: KASAN: slab-use-after-free in tcp_ack+0x1/0x2",
    "[   12.3] WARNING: CPU: 1 PID: 42 at net/ipv4/tcp_input.c:100 tcp_ack+0x1/0x2",
    "[   12.3] ------------[ cut here ]------------",
    "[   12.3] WARNING: possible circular locking dependency detected",
    "[   12.3] BUG: sleeping function called from invalid context at mm/slab.c:1",
    "[   12.3] Oops: general protection fault, probably for non-canonical address",
    "[   12.3] WARNING: possible recursive locking detected",
]


def test_benign_boot_log_is_clean():
    assert find_splats(BENIGN) == []


def test_each_splat_is_caught():
    for s in SPLATS:
        assert find_splats(BENIGN + s + "\n") == [s], s


def test_guest_path_maps_only_the_results_directory():
    out, g = "/tmp/p1", "/dcnet/out"
    assert guest_path("/tmp/p1", out, g) == g
    assert guest_path("/tmp/p1/boot1/raw.json", out, g) == g + "/boot1/raw.json"
    assert guest_path("--out=/tmp/p1/x", out, g) == "--out=" + g + "/x"
    # a sibling sharing the prefix (the experiment beside its results) stays
    assert guest_path("/tmp/p1.json", out, g) == "/tmp/p1.json"
    assert guest_path("/tmp/p10/raw.json", out, g) == "/tmp/p10/raw.json"
    assert guest_path("--experiment=/tmp/p1.json", out, g) == "--experiment=/tmp/p1.json"
    assert guest_path("--out", out, g) == "--out"


def test_a_boot_that_never_started_is_retried_once(tmp_path):
    """vng ending within seconds without the guest's log is a failed boot,
    not a failed run: booted once more; a guest that started (its log
    exists) or a second failed boot is the answer"""
    from dcnet.host import vmrun
    calls = []

    def boot(rcs):
        def f():
            calls.append(1)
            return rcs[len(calls) - 1]
        return f
    assert vmrun.run_booted(boot([1, 0]), str(tmp_path)) == 0 and len(calls) == 2
    calls.clear()
    assert vmrun.run_booted(boot([1, 1]), str(tmp_path)) == 1 and len(calls) == 2
    calls.clear()
    assert vmrun.run_booted(boot([0]), str(tmp_path)) == 0 and len(calls) == 1
    calls.clear()
    (tmp_path / "guest.log").write_text("a test failed\n")
    assert vmrun.run_booted(boot([1, 0]), str(tmp_path)) == 1 and len(calls) == 1
    calls.clear()
    (tmp_path / "guest.log").unlink()
    assert vmrun.run_booted(boot([1, 0]), str(tmp_path), limit=0) == 1 and len(calls) == 1
