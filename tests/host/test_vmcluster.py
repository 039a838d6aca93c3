"""testbed/physical/vmcluster.sh: the pieces that run without booting a
machine (the boot itself is `make testbed-vmcluster`, docs/deploy.md)."""
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "testbed", "physical", "vmcluster.sh")


@pytest.mark.skipif(not (shutil.which("mkfs.ext4") and shutil.which("debugfs")), reason="no e2fsprogs")
def test_boots_the_newest_kernel_in_boot_as_grub_would(tmp_path):
    root = tmp_path / "root"
    (root / "boot").mkdir(parents=True)
    kernels = ["6.1.0-50-cloud-amd64", "6.12.118-dcnet", "6.1.0-9-cloud-amd64"]
    for k in kernels:
        (root / "boot" / f"vmlinuz-{k}").write_text(k)
        (root / "boot" / f"initrd.img-{k}").write_text(k)
    (root / "boot" / "config-6.99.0-other").write_text("not a kernel")
    img = tmp_path / "disk.img"
    subprocess.run(["truncate", "-s", "16M", str(img)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-d", str(root), str(img)], check=True)

    def newest():
        return subprocess.run(["bash", SCRIPT, "newest-kernel", str(img)], check=True,
                              capture_output=True, text=True).stdout.strip()
    assert newest() == "6.12.118-dcnet"
    # only Debian's: 6.1.0-50 above 6.1.0-9 (version order, not text order)
    (root / "boot" / "vmlinuz-6.12.118-dcnet").unlink()
    subprocess.run(["mkfs.ext4", "-q", "-F", "-d", str(root), str(img)], check=True)
    assert newest() == "6.1.0-50-cloud-amd64"


def test_make_target_packages_the_vm_kernel_first():
    mk = open(os.path.join(ROOT, "Makefile")).read()
    i = mk.index("\ntestbed-vmcluster:")
    body = mk[i:mk.index("\n\n", i)]
    assert "DCNET_PKG_FLAVOR=vm scripts/packages.sh all" in body
    assert body.index("packages.sh") < body.index("vmcluster.sh all")
