"""The patch series: applies to the pristine tree, exports with git
format-patch and re-applies with git am, and is checkpatch clean."""
import glob
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD") or os.path.join(
    os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "dcnet", "build")
PRISTINE = os.path.join(BUILD, "pristine")


def series():
    with open(os.path.join(ROOT, "kernel-patches", "series")) as f:
        return [l.split()[0] for l in f if l.strip() and not l.startswith("#")]


@pytest.fixture(scope="module")
def pristine():
    subprocess.run([os.path.join(ROOT, "scripts", "kernel.sh"), "version"], check=True,
                   stdout=subprocess.DEVNULL)
    return PRISTINE


def test_series_exports_and_applies_with_git_am(tmp_path, pristine):
    out = tmp_path / "dist"
    r = subprocess.run([os.path.join(ROOT, "scripts", "series.sh"), str(out), str(tmp_path / "work")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    patches = sorted(glob.glob(str(out / "*.patch")))
    assert len(patches) == len(series())
    # Apply the exported series with git am onto a fresh copy of the
    # pristine files it touches, independent of series.sh's own work tree.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    files = set()
    for p in patches:
        for line in open(p):
            if line.startswith("--- a/"):
                files.add(line[6:].strip())
    for f in files:
        os.makedirs(fresh / os.path.dirname(f), exist_ok=True)
        subprocess.run(["cp", os.path.join(pristine, f), str(fresh / f)], check=True)
    git = ["git", "-C", str(fresh), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "pristine"], check=True)
    r = subprocess.run(git + ["am", "-q"] + patches, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    log = subprocess.run(git + ["log", "--format=%s"], capture_output=True, text=True).stdout
    assert log.count("\n") == len(patches) + 1
    # the new files arrived with their patches
    assert (fresh / "net/ipv4/tcp_d2tcp.c").exists()
    assert (fresh / "net/Kconfig.dcnet").exists()


def test_kernel_patches_apply_to_pristine(tmp_path, pristine):
    """kernel-patches/ apply in series order, each on top of the ones
    before it, to a copy of the pristine files they touch"""
    files = set()
    for p in series():
        for line in open(os.path.join(ROOT, "kernel-patches", p)):
            if line.startswith("--- a/"):
                files.add(line[6:].strip())
    for f in files:
        os.makedirs(tmp_path / os.path.dirname(f), exist_ok=True)
        subprocess.run(["cp", os.path.join(pristine, f), str(tmp_path / f)], check=True)
    for p in series():
        r = subprocess.run(["patch", "-d", str(tmp_path), "-p1", "-s", "-f", "-N",
                            "-i", os.path.join(ROOT, "kernel-patches", p)],
                           capture_output=True, text=True)
        assert r.returncode == 0, f"{p}: {r.stdout}{r.stderr}"


def checkpatch(pristine, args):
    return subprocess.run(["perl", os.path.join(pristine, "scripts", "checkpatch.pl"),
                           "--no-tree", "--terse", "--show-types",
                           # net/Kconfig sourcing net/Kconfig.dcnet reads as the file naming itself
                           "--ignore", "EMBEDDED_FILENAME"] + args,
                          capture_output=True, text=True)


def test_new_files_are_checkpatch_clean(pristine):
    files = [os.path.join(ROOT, f) for f in
             subprocess.run(["git", "-C", ROOT, "ls-files", "net", "include"], capture_output=True,
                            text=True).stdout.split() if f.endswith((".c", ".h"))]
    if not files:  # not a git checkout: take what is there
        files = glob.glob(os.path.join(ROOT, "net", "**", "*.[ch]"), recursive=True)
    assert files
    r = checkpatch(pristine, ["-f"] + files)
    findings = [l for l in r.stdout.splitlines() if ": ERROR:" in l or ": WARNING:" in l]
    assert findings == [], "\n".join(findings)


def test_patches_are_checkpatch_clean(pristine):
    for p in series():
        r = checkpatch(pristine, [os.path.join(ROOT, "kernel-patches", p)])
        findings = [l for l in r.stdout.splitlines() if ": ERROR:" in l or ": WARNING:" in l]
        assert findings == [], f"{p}:\n" + "\n".join(findings)
