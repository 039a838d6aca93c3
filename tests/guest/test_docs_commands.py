"""Each feature page's "Turning it on" commands work as written.

The shell commands of that section (tc, sysctl, modprobe, ethtool, ip,
echo into sysfs, python -m dcnet presto-gro) run in a fresh network namespace of the booted kernel,
whose devices carry the names the pages use (eth0, eth1, presto0). `tc`
is the project's (the page says to use it). A root qdisc the page adds
twice, as alternatives, is deleted before the second. Commands for
daemons (ovs-vsctl, ovs-ofctl: test_presto.py runs those) and build
commands are not run.
"""
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGES = ["d2tcp.md", "htb-ecn.md", "fastlane.md", "fastlane-multipath.md", "presto.md"]
RUNNABLE = re.compile(r"^(tc|\$TC|sysctl|modprobe|ethtool|ip|echo [0-9]+ > /sys/|python -m dcnet presto-gro )")


def section(text, title="Turning it on"):
    m = re.search(r"^## %s\n(.*?)(?=^## )" % re.escape(title), text, re.S | re.M)
    assert m, "no '## %s' section" % title
    return m.group(1)


HOST_MARK = "# in the host's namespace"


def shell_lines(sec, host=False):
    """the shell lines of a section: fenced sh blocks and indented blocks;
    host: only the blocks that begin with HOST_MARK (commands a page says
    to run once in the host's namespace), else all the others"""
    out, fence, block = [], None, []

    def flush():
        if block and (block[0].strip() == HOST_MARK) == host:
            out.extend(block)
        out.append("")
        block.clear()

    for line in sec.splitlines():
        if line.startswith("```"):
            if fence is not None:
                flush()
            fence = None if fence is not None else (line[3:].strip() or "sh")
            continue
        if fence is not None:
            if fence in ("sh", "shell", "bash", "console"):
                block.append(line)
        elif line.startswith("    "):
            block.append(line[4:])
        else:
            flush()
    flush()
    joined, cur = [], ""
    for line in out:
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        joined.append((cur + line).strip())
        cur = ""
    cmds = []
    for c in joined:
        c = re.sub(r"\s+#.*$", "", c).strip()
        if RUNNABLE.match(c):
            cmds.append(c)
    return cmds


def script(cmds):
    lines = ['TC="${DCNET_TC:-tc}"']
    for c in cmds:
        c = re.sub(r"^tc ", "$TC ", c)
        m = re.match(r"^\$TC qdisc (add|replace) dev (\S+) root\b", c)
        if m and m.group(1) == "add":
            lines.append(f"$TC qdisc del dev {m.group(2)} root 2>/dev/null || true")
        q = c.replace("'", "'\\''")
        lines.append(f"echo '+ {q}'; {c} || {{ echo 'FAILED: {q}'; exit 1; }}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("page", PAGES)
def test_turning_it_on_commands_run(page):
    with open(os.path.join(ROOT, "docs", page)) as f:
        sec = section(f.read())
    cmds, host = shell_lines(sec), shell_lines(sec, host=True)
    assert cmds, f"docs/{page}: no runnable command in 'Turning it on'"
    # what the page says to run once in the host's namespace runs in the
    # guest's initial one; the settings it changes are put back afterwards
    allowed = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"
    with open(allowed) as f:
        was = f.read().strip()
    if host:
        p = subprocess.run(["sh", "-c", script(host)], capture_output=True, text=True, timeout=120)
        print(p.stdout)
        assert p.returncode == 0, f"docs/{page} (host's namespace):\n{p.stdout}\n{p.stderr}"
    ns = "doc" + re.sub(r"\W", "", page.split(".")[0])[:10]
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        setup = ("ip link add eth0 type veth peer name peer0 && "
                 "ip link add eth1 type veth peer name peer1 && "
                 "ip link add presto0 type veth peer name peer2 && "
                 "for d in eth0 eth1 presto0 peer0 peer1 peer2; do ip link set $d up; done")
        subprocess.run(["ip", "netns", "exec", ns, "sh", "-c", setup], check=True)
        # ip netns exec, not nsenter: it remounts /sys for the namespace,
        # so /sys/class/net/DEV is the namespace's device
        p = subprocess.run(["ip", "netns", "exec", ns, "sh", "-c", script(cmds)],
                           capture_output=True, text=True, timeout=300)
        print(p.stdout)
        assert p.returncode == 0, f"docs/{page}:\n{p.stdout}\n{p.stderr}"
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        with open(allowed, "w") as f:
            f.write(was)
