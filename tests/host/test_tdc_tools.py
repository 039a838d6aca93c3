"""tests/guest/tdc_tools.py on the kernel tree's own tdc: nsPlugin's
namespace commands, once patched, have finished when nsPlugin returns, so a
case never enters a namespace whose `ip netns add` (or the previous case's
`netns delete`) is still queued; a batch that fails fails the case.  Runs
nsPlugin with a stand-in `ip -b -` that is slow, logs each command and
makes a directory for each dummy device it adds."""
import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
GUEST = os.path.join(os.path.dirname(HERE), "guest")


def tdc_tools():
    spec = importlib.util.spec_from_file_location("tdc_tools", os.path.join(GUEST, "tdc_tools.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


DRIVER = textwrap.dedent("""
    import sys, types
    import nsPlugin     # from plugin-lib (PYTHONPATH)
    p = nsPlugin.SubPlugin()
    p.args = types.SimpleNamespace(verbose=0, NAMES={"IP": sys.argv[1], "NS": "tcut-x"})
    p._dcnet_sysnet = sys.argv[3]
    try:
        p._exec_cmd_batched("pre", ["netns add tcut-x", "link add a type veth peer name b"])
    except Exception as e:
        print("raised", type(e).__name__)
    with open(sys.argv[2]) as f:
        print("logged", " | ".join(f.read().splitlines()) or "nothing")
""")


@pytest.fixture
def work(tmp_path):
    t = tdc_tools()
    src = t.tdc_dir()
    if not src:
        pytest.skip("no kernel tree with tools/testing/selftests/tc-testing")
    w = tmp_path / "tc-testing"
    shutil.copytree(src, w, ignore=shutil.ignore_patterns("tc-tests"))
    t.synced(w)
    (w / "driver.py").write_text(DRIVER)
    return w


def run(work, tmp_path, status):
    log = tmp_path / "ip.log"
    log.write_text("")
    sysnet = tmp_path / "sys"
    sysnet.mkdir()
    ip = tmp_path / "ip"
    ip.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        # a slow `ip -b -`: each command takes 0.3 s, a failing one ends the batch
        while read -r line; do
            sleep 0.3
            echo "$line" >> {log}
            [ {status} = 0 ] || exit 1
            case "$line" in "link add "*" type dummy") set -- $line; mkdir {sysnet}/$3;; esac
        done
        """))
    ip.chmod(0o755)
    p = subprocess.run([sys.executable, "driver.py", str(ip), str(log), f"{sysnet}/"], cwd=work,
                       env=dict(os.environ, PYTHONPATH=str(work / "plugin-lib")),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_namespace_commands_done_when_nsplugin_returns(work, tmp_path):
    out = run(work, tmp_path, 0)
    assert "logged netns add tcut-x | link add a type veth peer name b | link add tdcsync1 type dummy" \
        in out, out
    assert "raised" not in out, out


def test_failing_batch_fails_the_case(work, tmp_path):
    out = run(work, tmp_path, 1)
    assert "raised RuntimeError" in out, out
