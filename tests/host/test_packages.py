"""make packages (scripts/packages.sh): versions, the kernel flavor for real
machines, and the apt repository a host installs from.

The package builds themselves take from minutes (iproute2) to hours (the
hardware kernel) and are not run here; the repository is built from small
packages made in the test, and read back with apt the way a host reads it.
"""
import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "packages.sh")

need = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("dpkg-deb", "dpkg-scanpackages", "apt-ftparchive", "apt-cache")),
    reason="dpkg-dev and apt-utils (scripts/deps.sh) are not installed")


def compare(a, op, b):
    return subprocess.run(["dpkg", "--compare-versions", a, op, b]).returncode == 0


def run(args, env=None, check=True):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(["bash", SCRIPT] + args, env=e, capture_output=True, text=True, check=check)


@pytest.mark.skipif(not shutil.which("dpkg-query"), reason="not a Debian system")
def test_versions_sort_above_debian_and_say_dcnet():
    out = run(["versions"]).stdout.split("\n")
    rows = dict(line.split(" ", 1) for line in out if line)
    kernel = [k for k in rows if k.startswith("linux-image-")]
    assert len(kernel) == 1 and kernel[0].endswith("-dcnet"), rows
    src = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "linux-source-6.12"],
                         capture_output=True, text=True).stdout
    assert rows[kernel[0]] == src + "+dcnet1"
    assert compare(rows[kernel[0]], "gt", src)
    for pkg, debian in (("iproute2", "iproute2"), ("openvswitch-switch", "openvswitch-source")):
        if pkg in rows:
            deb = subprocess.run(["dpkg-query", "-W", "-f=${Version}", debian],
                                 capture_output=True, text=True).stdout
            assert rows[pkg].endswith("+dcnet1") and compare(rows[pkg], "gt", deb)
    assert re.fullmatch(r"0~(git\d{8}\.[0-9a-f]+|local)-1", rows["dcnet-tools"])
    # a second revision sorts above the first
    again = run(["versions"], env={"DCNET_PKG_REVISION": "2"}).stdout
    assert src + "+dcnet2" in again and compare(src + "+dcnet2", "gt", src + "+dcnet1")


def kconfig_options(path):
    text = open(path).read()
    return set(re.findall(r"^(?:menu)?config (\w+)", text, re.M))


def fragment(path):
    opts = {}
    for line in open(path):
        m = re.match(r"^(CONFIG_\w+)=(.*)$", line) or re.match(r"^# (CONFIG_\w+) is not set", line)
        if m:
            opts[m.group(1)] = m.group(2) if m.lastindex == 2 else "n"
    return opts


def test_hardware_flavor_enables_every_feature_of_the_patchset():
    """Every option of the patchset (but its KUnit tests) is in the
    hardware fragment, so a new feature cannot be left out of the packages;
    the release flavor asks for the same values."""
    ours = kconfig_options(os.path.join(ROOT, "Kconfig"))
    features = {"CONFIG_" + o for o in ours if not o.endswith("_KUNIT_TEST")}
    hw = fragment(os.path.join(ROOT, "kconfig", "hardware.config"))
    assert features <= set(hw), features - set(hw)
    assert all(hw[o] in ("y", "m") for o in features)
    assert hw["CONFIG_LOCALVERSION"] == '"-dcnet"'
    assert hw["CONFIG_MODULE_SIG_ALL"] == "y"
    vm = fragment(os.path.join(ROOT, "kconfig", "base.config"))
    vm.update(fragment(os.path.join(ROOT, "kconfig", "release.config")))
    for o in features:
        assert vm.get(o) == hw[o], (o, vm.get(o), hw[o])
    nodbg = fragment(os.path.join(ROOT, "kconfig", "no-debug-info.config"))
    assert nodbg["CONFIG_DEBUG_INFO_NONE"] == "y" and nodbg["CONFIG_DEBUG_INFO_BTF"] == "n"


def fake_deb(dest, name, version):
    d = os.path.join(os.path.dirname(dest), "root-" + name + "-" + version)
    os.makedirs(os.path.join(d, "DEBIAN"), exist_ok=True)
    with open(os.path.join(d, "DEBIAN", "control"), "w") as f:
        f.write(f"Package: {name}\nVersion: {version}\nArchitecture: all\n"
                f"Maintainer: t <t@example.org>\nDescription: test\n test\n")
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    subprocess.run(["dpkg-deb", "--root-owner-group", "--build", d, dest], check=True, capture_output=True)
    shutil.rmtree(d)


@need
def test_repository_is_read_by_apt_and_wins_over_debian(tmp_path):
    build = tmp_path / "build"
    out = build / "packages"
    fake_deb(str(out / "tools" / "dcnet-tools_0~git1-1_all.deb"), "dcnet-tools", "0~git1-1")
    fake_deb(str(out / "iproute2" / "iproute2_6.1.0-3+dcnet1_all.deb"), "iproute2", "6.1.0-3+dcnet1")
    fake_deb(str(out / "iproute2" / "iproute2-dbgsym_6.1.0-3+dcnet1_all.deb"), "iproute2-dbgsym",
             "6.1.0-3+dcnet1")
    fake_deb(str(out / "kernel-hardware" / "linux-image-6.12.1-dcnet_6.12.1-1+dcnet1_all.deb"),
             "linux-image-6.12.1-dcnet", "6.12.1-1+dcnet1")
    fake_deb(str(out / "kernel-release" / "linux-image-6.12.1-dcnet_6.12.1-1+dcnet1_all.deb"),
             "linux-image-6.12.1-dcnet", "6.12.1-1+dcnet1")
    fake_deb(str(out / "kernel-hardware" / "linux-image-6.12.1-dcnet-dbg_6.12.1-1+dcnet1_all.deb"),
             "linux-image-6.12.1-dcnet-dbg", "6.12.1-1+dcnet1")
    r = run(["repo"], env={"BUILD": str(build), "DCNET_APT_KEY": ""})
    assert "unsigned: trusted=yes" in r.stderr
    repo = out / "apt"
    names = sorted(p.name for p in repo.glob("*.deb"))
    # one kernel (the hardware flavor's), no debug-symbol packages
    assert names == ["dcnet-tools_0~git1-1_all.deb", "iproute2_6.1.0-3+dcnet1_all.deb",
                     "linux-image-6.12.1-dcnet_6.12.1-1+dcnet1_all.deb"], names
    assert os.path.samefile(repo / names[0], out / "tools" / names[0])
    release = (repo / "Release").read_text()
    assert "Origin: dcnet" in release and "Packages.gz" in release
    sources = (repo / "dcnet.sources").read_text()
    assert "Trusted: yes" in sources and "URIs: file:/var/lib/dcnet/apt" in sources

    # apt on a "host": the repository where the role puts it, Debian's own
    # iproute2 at a higher version beside it (a later Debian update).
    debian = tmp_path / "debian"
    fake_deb(str(debian / "iproute2_6.1.0-4_all.deb"), "iproute2", "6.1.0-4")
    subprocess.run("dpkg-scanpackages -m . /dev/null > Packages 2>/dev/null", shell=True, cwd=debian,
                   check=True)
    etc = tmp_path / "etc"
    (etc / "sources.list.d").mkdir(parents=True)
    (etc / "preferences.d").mkdir()
    (etc / "sources.list.d" / "dcnet.sources").write_text(
        sources.replace("file:/var/lib/dcnet/apt", "file:" + str(repo)))
    (etc / "sources.list.d" / "debian.sources").write_text(
        f"Types: deb\nURIs: file:{debian}\nSuites: ./\nTrusted: yes\n")
    shutil.copy(repo / "dcnet.pref", etc / "preferences.d" / "dcnet.pref")
    state = tmp_path / "state"
    (state / "lists" / "partial").mkdir(parents=True)
    cache = tmp_path / "cache"
    (cache / "archives" / "partial").mkdir(parents=True)
    apt = ["-o", f"Dir::Etc={etc}", "-o", "Dir::Etc::SourceList=/dev/null",
           "-o", f"Dir::Etc::SourceParts={etc}/sources.list.d",
           "-o", f"Dir::Etc::PreferencesParts={etc}/preferences.d",
           "-o", f"Dir::State::Lists={state}/lists", "-o", f"Dir::State::status={tmp_path}/status",
           "-o", f"Dir::Cache={cache}", "-o", "Debug::NoLocking=1"]
    (tmp_path / "status").write_text("")
    subprocess.run(["apt-get", "-qq"] + apt + ["update"], check=True, capture_output=True)
    pol = subprocess.run(["apt-cache"] + apt + ["policy", "iproute2", "linux-image-6.12.1-dcnet"],
                         check=True, capture_output=True, text=True).stdout
    cand = re.search(r"iproute2:\n\s+Installed: .*\n\s+Candidate: (\S+)", pol)
    assert cand and cand.group(1) == "6.1.0-3+dcnet1", pol
    assert re.search(r"990 file:" + re.escape(str(repo)), pol), pol
    assert re.search(r"linux-image-6.12.1-dcnet:\n\s+Installed: .*\n\s+Candidate: 6.12.1-1\+dcnet1", pol), pol


def test_make_packages_target():
    mk = open(os.path.join(ROOT, "Makefile")).read()
    assert re.search(r"^packages:.*\n\t@scripts/packages.sh", mk, re.M)
