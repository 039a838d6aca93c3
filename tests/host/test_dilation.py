"""Dilated virtual time: a negative icount shift (qemu-patches/,
scripts/qemu.sh) reaches QEMU with the patched binary, is recorded in
vm.json and in every report's header; shifts out of range are refused."""
import glob
import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from dcnet.host import vmrun
from dcnet.host import sealed
from dcnet import hostrun

RECORDING_VNG = ("#!/bin/sh\necho \"$@\" > {argv}\n"
                 "for a; do case $a in sh\\ *) s=${{a#sh }};; esac; done\n"
                 "out=$(sed -n 's/^export DCNET_OUT=//p' $s); echo 0 > $out/status\n")


def fake_kernel(tmp_path):
    kdir = tmp_path / "obj"
    (kdir / "arch/x86/boot").mkdir(parents=True)
    (kdir / "arch/x86/boot/bzImage").write_bytes(b"")
    (kdir / "include/config").mkdir(parents=True)
    (kdir / "include/config/kernel.release").write_text("6.12.0-test\n")
    return kdir


def test_shift_from_flag_env_or_default(monkeypatch):
    monkeypatch.delenv("DCNET_ICOUNT_SHIFT", raising=False)
    assert vmrun.icount_shift() == 0
    monkeypatch.setenv("DCNET_ICOUNT_SHIFT", "-3")
    assert vmrun.icount_shift() == -3
    assert vmrun.icount_shift("2") == 2
    assert vmrun.instructions_per_ns(-3) == 8 and vmrun.instructions_per_ns(1) == 0.5
    for bad in ("-11", "11", "x", "1.5"):
        with pytest.raises(SystemExit):
            vmrun.icount_shift(bad)


def test_negative_shift_uses_the_patched_qemu(tmp_path, monkeypatch):
    """In virtual time with shift -2, vng gets --qemu= the patched binary
    and -icount shift=-2; vm.json says 4 instructions per ns."""
    qemu = tmp_path / "qemu-system-x86_64"
    qemu.write_text("#!/bin/sh\n")
    qemu.chmod(0o755)
    vng = tmp_path / "vng"
    vng.write_text(RECORDING_VNG.format(argv=tmp_path / "argv"))
    vng.chmod(0o755)
    monkeypatch.setenv("DCNET_VNG", str(vng))
    monkeypatch.setenv("DCNET_QEMU", str(qemu))
    monkeypatch.setenv("DCNET_VM_ROOT", "9p")
    monkeypatch.delenv("DCNET_VM_SEED", raising=False)
    rc = vmrun.run(str(fake_kernel(tmp_path)), str(tmp_path / "out"), ["true"], timeout=20, cpus=1,
                   memory="1G", verbose=False, clock="virtual", shift="-2")
    assert rc == 0
    argv = (tmp_path / "argv").read_text()
    assert f"--qemu={qemu}" in argv and "-icount shift=-2,sleep=off" in argv
    meta = json.load(open(tmp_path / "out" / "vm.json"))
    assert meta["icount_shift"] == -2 and meta["instructions_per_ns"] == 4 and meta["qemu"] == str(qemu)
    assert "shift=-2, sleep=off: 4 instructions per ns, dilated time" in hostrun.header(str(tmp_path / "out"))


def test_shift_zero_keeps_the_system_qemu(tmp_path, monkeypatch):
    vng = tmp_path / "vng"
    vng.write_text(RECORDING_VNG.format(argv=tmp_path / "argv"))
    vng.chmod(0o755)
    monkeypatch.setenv("DCNET_VNG", str(vng))
    monkeypatch.delenv("DCNET_QEMU", raising=False)
    monkeypatch.delenv("DCNET_ICOUNT_SHIFT", raising=False)
    monkeypatch.setenv("DCNET_VM_ROOT", "9p")
    rc = vmrun.run(str(fake_kernel(tmp_path)), str(tmp_path / "out"), ["true"], timeout=20, cpus=1,
                   memory="1G", verbose=False, clock="virtual")
    assert rc == 0
    argv = (tmp_path / "argv").read_text()
    assert "--qemu=" not in argv and "-icount shift=0,sleep=off" in argv
    assert "1 ns per instruction" in hostrun.header(str(tmp_path / "out"))


def test_sealed_argv_carries_shift_and_binary(monkeypatch):
    monkeypatch.delenv("DCNET_VM_RR", raising=False)
    argv = sealed.qemu_argv("img", "bz", 1, "2G", "con", shift=-3, qemu="/x/qemu")
    assert argv[0] == "/x/qemu"
    assert argv[argv.index("-icount") + 1] == "shift=-3,sleep=off,rr=record,rrfile=/dev/null"
    assert sealed.qemu_argv("img", "bz", 1, "2G", "con")[0] == "qemu-system-x86_64"


def test_qemu_patches_apply_to_debians_source(tmp_path):
    """qemu-patches/ apply to the cached Debian qemu source package (the
    one scripts/qemu.sh builds from), after Debian's own patches."""
    build = os.environ.get("BUILD") or os.path.expanduser("~/.cache/dcnet/build")
    dsc = sorted(glob.glob(os.path.join(build, "qemu-src", "qemu_*.dsc")))
    if not dsc:
        pytest.skip("no cached qemu source package (scripts/qemu.sh fetches it)")
    tree = tmp_path / "qemu"
    subprocess.run(["dpkg-source", "-q", "-x", "--no-check", dsc[-1], str(tree)], check=True,
                   capture_output=True)
    for p in sorted(glob.glob(os.path.join(ROOT, "qemu-patches", "*.patch"))):
        r = subprocess.run(["patch", "-d", str(tree), "-p1", "--dry-run", "-s", "-i", p],
                           capture_output=True, text=True)
        assert r.returncode == 0, f"{os.path.basename(p)}: {r.stdout}{r.stderr}"
    assert subprocess.run(["patch", "-d", str(tree), "-p1", "-s", "-i",
                           os.path.join(ROOT, "qemu-patches", "0001-icount-negative-shift.patch")]).returncode == 0
    src = (tree / "softmmu" / "icount.c").read_text()
    assert "MIN_ICOUNT_SHIFT (-10)" in src and "return count << -shift;" in src
