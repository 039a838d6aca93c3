"""Running the kernel's tc-testing (tdc) on suites of ours in the guest.

tdc comes from the patched kernel tree (the newest ~/.cache/dcnet/*/linux,
or DCNET_KSRC); callers skip when there is none.  run_tdc() copies tdc to
a scratch directory with only the suites asked for, makes nsPlugin wait
until its namespace commands are done (synced()), runs it with the project's tc
(DCNET_TC) and the toolbox's sh and ip (boxed()), keeps the TAP output in
DCNET_OUT and asserts that no case failed.
"""
import glob
import os
import re
import shutil
import subprocess
import sys

from dcnet import config

NS_TICKS = 600      # 0.1 s each: nsPlugin waits up to 60 s for a netns

# nsPlugin (without pyroute2) writes its namespace commands into one
# background `ip -b -` and returns at once; it then only waits for the file
# /run/netns/NAME.  `ip netns add` creates that file before it bind-mounts
# the namespace on it, and a case's `netns delete` and the next case's
# `netns add` of the same name (and its devices) are still queued when the
# old file is found: under load, a case's first `ip netns exec` then fails
# with "setting the network namespace ... failed: Invalid argument".  After
# the commands that build a case's namespace, queue a dummy device in this
# namespace and wait until it shows in /sys/class/net: `ip -b` runs its
# commands in order, so everything before it is done (no process per
# command: each is seconds in the debug guest under load).
NS_BATCHED = """    def _exec_cmd_batched(self, stage, commands):
        for cmd in commands:
            self._exec_cmd(stage, cmd)
"""
NS_SYNCED = NS_BATCHED + """        # dcnet (tests/guest/tdc_tools.py): wait for `ip -b` to get here
        self._dcnet_sync = getattr(self, '_dcnet_sync', 0) + 1
        name = 'tdcsync%d' % self._dcnet_sync
        sysnet = getattr(self, '_dcnet_sysnet', '/sys/class/net/')
        self._exec_cmd(stage, 'link add %s type dummy' % name)
        deadline = time.time() + 300
        while not os.path.exists(sysnet + name):
            self._proc_check()
            if time.time() > deadline:
                raise TimeoutError('ip -b never ran ' + name)
            time.sleep(0.05)
        self._exec_cmd(stage, 'link del %s' % name)
"""


def tdc_dir():
    roots = [config.get("DCNET_KSRC")] if config.get("DCNET_KSRC") else sorted(
        glob.glob(os.path.expanduser("~/.cache/dcnet/*/linux")), key=os.path.getmtime, reverse=True)
    for r in roots:
        d = os.path.join(r, "tools", "testing", "selftests", "tc-testing")
        if os.path.exists(os.path.join(d, "tdc.py")):
            return d
    return None


def boxed(work):
    """tdc runs every command through /bin/sh with an empty environment
    and `ip` as /sbin/ip: two execs from 9p per command, most of a case's
    time in the debug guest.  Point them at the toolbox's copies of the
    same programs (dcnet/warm.py; the guest's conftest put it first in
    PATH), and give the commands that PATH."""
    sh, ip = shutil.which("sh"), shutil.which("ip")
    if not (sh and ip and sh.startswith("/tmp/dcnet-tools/")):
        return
    for rel in ("tdc.py", os.path.join("plugin-lib", "nsPlugin.py")):
        f = work / rel
        text = f.read_text()
        assert "shell=True," in text, f"{rel} no longer runs commands with shell=True: update tdc_tools"
        f.write_text(text.replace("shell=True,", f"shell=True, executable={sh!r},"))
    f = work / "tdc_config.py"
    text = f.read_text()
    assert "'IP': '/sbin/ip'," in text and "ENVIR = { }" in text, \
        "tdc_config.py changed: update tdc_tools"
    path = os.path.dirname(sh) + ":/usr/sbin:/usr/bin:/sbin:/bin"
    f.write_text(text.replace("'IP': '/sbin/ip',", f"'IP': {ip!r},")
                 .replace("ENVIR = { }", f"ENVIR = {{'PATH': {path!r}, 'LC_ALL': 'C'}}"))


def synced(work):
    """nsPlugin's namespace commands done before a case starts (see NS_BATCHED)"""
    ns = work / "plugin-lib" / "nsPlugin.py"
    text = ns.read_text()
    assert "ticks = 20\n" in text, "nsPlugin's netns wait changed: update tdc_tools"
    assert NS_BATCHED in text, "nsPlugin's batched commands changed: update tdc_tools"
    ns.write_text(text.replace("ticks = 20\n", f"ticks = {NS_TICKS}\n")
                  .replace(NS_BATCHED, NS_SYNCED))


def run_tdc(src, tmp_path, suites, tap_name, timeout):
    """suites: [(path of a JSON suite, its name under tc-tests/qdiscs)];
    returns the names of the cases that passed"""
    tc = config.get("DCNET_TC") if config.is_set("DCNET_TC") else None
    assert tc and os.path.exists(tc), "the patched tc was not built (make iproute2)"
    work = tmp_path / "tc-testing"
    shutil.copytree(src, work, ignore=shutil.ignore_patterns("tc-tests"))
    synced(work)
    boxed(work)
    os.makedirs(work / "tc-tests" / "qdiscs")
    # raw rtnetlink requests tc would not send (tests/tdc/*.json call it
    # as ./htb_nl.py, from tdc's directory)
    shutil.copy(os.path.join(os.path.dirname(os.path.abspath(__file__)), "htb_nl.py"), work)
    files = []
    for path, name in suites:
        shutil.copy(path, work / "tc-tests" / "qdiscs" / name)
        files.append(f"tc-tests/qdiscs/{name}")
    p = subprocess.run([sys.executable, "tdc.py", "-p", tc, "-f"] + files,
                       cwd=work, capture_output=True, text=True, timeout=timeout)
    out = p.stdout + p.stderr
    with open(os.path.join(config.get("DCNET_OUT"), tap_name), "w") as f:
        f.write(out)
    ok = re.findall(r"^ok \d+ (\w+)", out, re.M)
    bad = re.findall(r"^not ok \d+ .*$", out, re.M)
    print(f"tdc: {len(ok)} ok, {len(bad)} not ok")
    assert not bad, "\n".join(bad) + "\n" + out[-3000:]
    return ok, out
