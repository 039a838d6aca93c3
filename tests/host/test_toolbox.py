"""dcnet.warm's staged toolbox: the host fills a box for the guest and
packs it as a disk, the guest unpacks it instead of running ldd and
patchelf per file, and a stale or different staged box is not used."""
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dcnet import warm

pytestmark = pytest.mark.skipif(not shutil.which("patchelf"), reason="patchelf not installed")


@pytest.fixture
def box(tmp_path, monkeypatch):
    """BOX in tmp_path, the environment install() edits restored after"""
    monkeypatch.setattr(warm, "BOX", str(tmp_path / "box"))
    monkeypatch.setattr(warm, "BOX_TOOLS", ["true"])
    monkeypatch.setattr(warm, "MPTCP_WRAP_GLOB", str(tmp_path / "none*"))
    for k in ("PATH", "LC_ALL", "DCNET_TC", "DCNET_SS", "DCNET_TOOLBOX_DISK"):
        if k in os.environ:
            monkeypatch.setenv(k, os.environ[k])
        else:
            monkeypatch.delenv(k, raising=False)
    tool = tmp_path / "mytool"
    shutil.copy2(shutil.which("true"), tool)
    return tmp_path, str(tool)


def staged(tmp, tool, monkeypatch, extra):
    """a staged box of extra on its disk image, which stands for the
    guest's device"""
    warm.stage(str(tmp / "stage"), extra)
    image = warm.stage_disk(str(tmp / "stage"), str(tmp / "toolbox.tar"))
    monkeypatch.setattr(warm, "_disk", lambda path: path if path == image else None)
    monkeypatch.setenv("DCNET_TOOLBOX_DISK", image)


def test_a_staged_box_is_read_from_its_disk_and_runs(box, monkeypatch, capsys):
    tmp, tool = box
    staged(tmp, tool, monkeypatch, [tool])
    tools = warm.install([tool])
    assert "unpacked from the staged box's disk" in capsys.readouterr().out
    assert set(tools) == {"mytool", "true"}
    assert all(p.startswith(warm.BOX + "/bin/") for p in tools.values())
    # patched to load from BOX, whose loader the disk brought
    assert subprocess.run([tools["mytool"]]).returncode == 0
    assert os.path.exists(os.path.join(warm.BOX, "lib", warm.LDSO))


def test_a_stale_staged_box_is_not_used(box, monkeypatch, capsys):
    tmp, tool = box
    staged(tmp, tool, monkeypatch, [tool])
    os.utime(tool, ns=(1, 1))               # rebuilt since it was staged
    tools = warm.install([tool])
    assert ", filled" in capsys.readouterr().out
    assert subprocess.run([tools["mytool"]]).returncode == 0


def test_a_staged_box_of_other_tools_is_not_used(box, monkeypatch, capsys):
    tmp, tool = box
    staged(tmp, tool, monkeypatch, [])
    tools = warm.install([tool])
    assert ", filled" in capsys.readouterr().out and "mytool" in tools
