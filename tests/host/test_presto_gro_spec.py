"""Presto GRO's generic netlink family: the uapi header is what the
kernel's ynl generator makes of Documentation/netlink/specs/presto-gro.yaml
(the spec validates against the kernel's genetlink schema), and
dcnet/prestogro.py speaks the same numbers."""
import os
import re
import subprocess
import sys

import pytest

from dcnet import config, prestogro

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC = os.path.join(ROOT, "Documentation", "netlink", "specs", "presto-gro.yaml")
UAPI = os.path.join(ROOT, "include", "uapi", "linux", "presto_gro.h")


def kernel_tree():
    """the unpacked kernel source the build uses, for its ynl tools"""
    tree = os.path.join(config.get("BUILD") or os.path.expanduser("~/.cache/dcnet/build"), "pristine")
    gen = os.path.join(tree, "tools", "net", "ynl", "ynl-gen-c.py")
    if not os.path.exists(gen):
        pytest.skip(f"no kernel source at {tree} (make kernel unpacks it)")
    return tree


def test_uapi_header_is_generated_from_the_spec(tmp_path):
    tree = kernel_tree()
    out = tmp_path / "presto_gro.h"
    # ynl-gen names the spec by its path relative to the tree
    spec_dir = tmp_path / "Documentation" / "netlink" / "specs"
    spec_dir.mkdir(parents=True)
    (spec_dir / "presto-gro.yaml").write_text(open(SPEC).read())
    # ynl-gen takes the directory with MAINTAINERS as the tree's root
    (tmp_path / "MAINTAINERS").write_text("")
    # the schema the spec is checked against, where ynl looks for it
    schema = os.path.join(tree, "Documentation", "netlink", "genetlink.yaml")
    (tmp_path / "Documentation" / "netlink" / "genetlink.yaml").write_text(open(schema).read())
    p = subprocess.run([sys.executable, os.path.join(tree, "tools", "net", "ynl", "ynl-gen-c.py"),
                        "--mode", "uapi", "--header", "--spec", "Documentation/netlink/specs/presto-gro.yaml",
                        "-o", str(out)], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert out.read_text() == open(UAPI).read(), "regenerate include/uapi/linux/presto_gro.h from the spec"


def test_python_client_numbers_match_the_uapi_header():
    h = open(UAPI).read()

    def enum_after(first):
        body = h[h.index(first):].split("};", 1)[0]
        names = re.findall(r"^\s*(PRESTO_GRO_[A-Z_]+)(?: = (\d+))?,", body, re.M)
        n, out = 0, {}
        for name, v in names:
            n = int(v) if v else n + 1
            out[name] = n
        return out
    dev = enum_after("PRESTO_GRO_A_DEV_IFINDEX")
    stats = enum_after("PRESTO_GRO_A_STATS_HELD")
    cmds = enum_after("PRESTO_GRO_CMD_DEV_GET")
    assert dev["PRESTO_GRO_A_DEV_IFINDEX"] == prestogro.A_IFINDEX
    assert dev["PRESTO_GRO_A_DEV_STATS"] == prestogro.A_STATS
    assert dev["PRESTO_GRO_A_DEV_NAPIS"] == prestogro.A_NAPIS
    for name, attr, _fmt in prestogro.SETTINGS:
        assert dev[f"PRESTO_GRO_A_DEV_{name.upper()}"] == attr, name
    for i, name in enumerate(prestogro.STATS):
        assert stats[f"PRESTO_GRO_A_STATS_{name.upper()}"] == i + 1, name
    assert (cmds["PRESTO_GRO_CMD_DEV_GET"], cmds["PRESTO_GRO_CMD_DEV_SET"]) == \
        (prestogro.CMD_DEV_GET, prestogro.CMD_DEV_SET)
    assert '"presto-gro"' in h and prestogro.FAMILY == "presto-gro"
