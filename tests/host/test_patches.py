"""The patch series: applies to the pristine tree, exports with git
format-patch (as the configured author, signed off once) and re-applies
with git am, matches its export in kernel-patches/, is checkpatch clean,
and kernel.sh says which source it was made for when the tree differs."""
import glob
import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD") or os.path.join(
    os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "dcnet", "build")
PRISTINE = os.path.join(BUILD, "pristine")


# The author the exports of these tests are made as (series.sh takes it
# from these variables before git's configuration).
AUTHOR_NAME = "Dcnet Test Author"
AUTHOR_EMAIL = "author@dcnet.invalid"
AUTHOR = f"{AUTHOR_NAME} <{AUTHOR_EMAIL}>"
PLACEHOLDER = "example.org"


def series():
    with open(os.path.join(ROOT, "kernel-patches", "series")) as f:
        return [l.split()[0] for l in f if l.strip() and not l.startswith("#")]


def parse_patch(path):
    """(headers with folded lines joined, message body up to the '---'
    line) of a git format-patch file"""
    text = open(path).read()
    head, _, rest = text.partition("\n\n")
    headers = {}
    last = None
    for line in head.splitlines()[1:]:  # after the "From <commit>" line
        if line[:1] in (" ", "\t") and last:
            headers[last] += " " + line.strip()
        else:
            last, _, value = line.partition(":")
            headers[last] = value.strip()
    body = rest.split("\n---\n", 1)[0]
    return headers, body


def signoffs(body):
    return [l[len("Signed-off-by:"):].strip() for l in body.splitlines()
            if l.startswith("Signed-off-by:")]


def without_signoffs(body):
    return "\n".join(l for l in body.splitlines() if not l.startswith("Signed-off-by:")).rstrip()


def isolated_git_env(home):
    """An environment in which git knows no user: no global or system
    configuration, no DCNET_AUTHOR_*"""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DCNET_AUTHOR_", "GIT_AUTHOR_", "GIT_COMMITTER_"))
           and k not in ("EMAIL",)}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home), GIT_CONFIG_NOSYSTEM="1",
               GIT_CONFIG_GLOBAL=os.devnull, GIT_CEILING_DIRECTORIES=str(home), BUILD=BUILD)
    return env


@pytest.fixture(scope="module")
def pristine():
    subprocess.run([os.path.join(ROOT, "scripts", "kernel.sh"), "version"], check=True,
                   stdout=subprocess.DEVNULL)
    return PRISTINE


@pytest.fixture(scope="module")
def exported(tmp_path_factory, pristine):
    """The series exported by make series's script as AUTHOR"""
    tmp = tmp_path_factory.mktemp("series")
    out = tmp / "dist"
    env = dict(os.environ, DCNET_AUTHOR_NAME=AUTHOR_NAME, DCNET_AUTHOR_EMAIL=AUTHOR_EMAIL)
    r = subprocess.run([os.path.join(ROOT, "scripts", "series.sh"), str(out), str(tmp / "work")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    return out


def test_series_exports_and_applies_with_git_am(tmp_path, pristine, exported):
    out = exported
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


def test_exported_patches_are_the_authors_signed_off_once(exported):
    patches = sorted(glob.glob(str(exported / "*.patch")))
    assert patches
    for p in patches:
        headers, body = parse_patch(p)
        name = os.path.basename(p)
        assert headers["From"] == AUTHOR, name
        assert signoffs(body) == [AUTHOR], name
        assert PLACEHOLDER not in open(p).read().split("\n---\n", 1)[0], name


def test_kernel_patches_match_the_export(exported):
    """kernel-patches/ carry the subjects and messages the export does (no
    stale "[PATCH 1/3]"), under the names format-patch gives them, each
    signed off once by its author and never by the placeholder"""
    names = sorted(os.path.basename(p) for p in glob.glob(str(exported / "*.patch")))
    assert names == series()
    for name in series():
        src_headers, src_body = parse_patch(os.path.join(ROOT, "kernel-patches", name))
        exp_headers, exp_body = parse_patch(str(exported / name))
        assert src_headers["Subject"] == exp_headers["Subject"], name
        assert re.match(r"\[PATCH\] \S", src_headers["Subject"]), name
        assert without_signoffs(src_body) == without_signoffs(exp_body), name
        assert signoffs(src_body) == [src_headers["From"]], name
        assert PLACEHOLDER not in src_headers["From"], name


def repo_copy(tmp_path):
    """The files series.sh reads, outside any git repository"""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    for f in ("series.sh", "kernel.sh"):
        shutil.copy2(os.path.join(ROOT, "scripts", f), repo / "scripts" / f)
    for d in ("kernel-patches", "net", "include", "Documentation"):
        if os.path.isdir(os.path.join(ROOT, d)):
            shutil.copytree(os.path.join(ROOT, d), repo / d)
    shutil.copy2(os.path.join(ROOT, "Kconfig"), repo / "Kconfig")
    return repo


def test_series_needs_an_author(tmp_path, pristine):
    repo = repo_copy(tmp_path)
    env = isolated_git_env(tmp_path)
    for extra in ({}, {"DCNET_AUTHOR_NAME": AUTHOR_NAME}, {"DCNET_AUTHOR_EMAIL": AUTHOR_EMAIL}):
        r = subprocess.run([str(repo / "scripts" / "series.sh"), str(tmp_path / "dist"),
                            str(tmp_path / "work")], capture_output=True, text=True,
                           env=dict(env, **extra))
        assert r.returncode != 0, extra
        assert "no author" in r.stderr and "DCNET_AUTHOR_NAME" in r.stderr, r.stderr
        assert "git config user.name" in r.stderr, r.stderr
        assert not (tmp_path / "dist").exists()


def test_series_takes_the_author_from_git_config(tmp_path, pristine):
    repo = repo_copy(tmp_path)
    env = isolated_git_env(tmp_path)
    git = ["git", "-C", str(repo)]
    subprocess.run(git + ["init", "-q"], check=True, env=env)
    subprocess.run(git + ["config", "user.name", "Repo Author"], check=True, env=env)
    subprocess.run(git + ["config", "user.email", "repo@dcnet.invalid"], check=True, env=env)
    r = subprocess.run([str(repo / "scripts" / "series.sh"), str(tmp_path / "dist"),
                        str(tmp_path / "work")], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    patches = sorted(glob.glob(str(tmp_path / "dist" / "*.patch")))
    assert len(patches) == len(series())
    for p in patches:
        headers, body = parse_patch(p)
        assert headers["From"] == "Repo Author <repo@dcnet.invalid>"
        assert signoffs(body) == ["Repo Author <repo@dcnet.invalid>"]


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


def kernel_sh(args, **kw):
    return subprocess.run([os.path.join(ROOT, "scripts", "kernel.sh")] + args,
                          capture_output=True, text=True, **kw)


def base():
    with open(os.path.join(ROOT, "kernel-patches", "BASE")) as f:
        return dict(l.split(None, 1) for l in (l.strip() for l in f) if l and not l.startswith("#"))


def test_base_records_the_source(pristine):
    b = base()
    assert b["package"].strip() == "linux-source-6.12"
    assert b["kernel"].strip().startswith("6.12.")
    assert b["debian"].strip().startswith(b["kernel"].strip() + "-")


def test_check_version_against_base(pristine):
    """the series applies to the unpacked source; a warning only if that
    is not the version in kernel-patches/BASE"""
    r = kernel_sh(["check-version"])
    assert r.returncode == 0, r.stderr
    assert "the series applies to Linux" in r.stderr
    found = kernel_sh(["version"]).stdout.strip()
    if found == base()["kernel"].strip():
        assert "warning" not in r.stderr, r.stderr


def test_check_version_mismatch_is_a_warning(pristine):
    found = kernel_sh(["version"]).stdout.strip()
    r = kernel_sh(["check-version", "6.12.999", "6.12.999-1~deb12u1"])
    assert r.returncode == 0, r.stderr
    assert f"warning: the kernel source is Linux {found}" in r.stderr, r.stderr
    assert "were made for Linux 6.12.999 (linux-source-6.12 6.12.999-1~deb12u1)" in r.stderr
    assert "trying them anyway" in r.stderr
    assert "although it was made for Linux 6.12.999" in r.stderr


def test_check_version_patch_that_does_not_apply(tmp_path, pristine):
    """a patch that does not apply stops with its name, both versions and
    what to do"""
    found = kernel_sh(["version"]).stdout.strip()
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy2(os.path.join(ROOT, "scripts", "kernel.sh"), repo / "scripts" / "kernel.sh")
    kp = repo / "kernel-patches"
    kp.mkdir()
    (kp / "0001-bad.patch").write_text(
        "--- a/Makefile\n+++ b/Makefile\n@@ -1,3 +1,3 @@\n"
        " # SPDX-License-Identifier: GPL-2.0\n-VERSION = 5\n+VERSION = 7\n PATCHLEVEL = 12\n")
    (kp / "series").write_text("# a series made for another source\n0001-bad.patch\n")
    (kp / "BASE").write_text("package linux-source-6.12\ndebian 6.12.999-1~deb12u1\nkernel 6.12.999\n")
    build = tmp_path / "build"  # this test's own, on the shared pristine tree
    build.mkdir()
    os.symlink(PRISTINE, build / "pristine")
    env = dict(os.environ, BUILD=str(build))
    r = subprocess.run([str(repo / "scripts" / "kernel.sh"), "check-version"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 1, r.stderr
    assert "warning: the kernel source is" in r.stderr
    err = r.stderr[r.stderr.index("error:"):]
    assert f"kernel-patches/0001-bad.patch does not apply to Linux {found}" in err, err
    assert "were made for Linux 6.12.999 (linux-source-6.12 6.12.999-1~deb12u1)" in err, err
    assert "apt-get install linux-source-6.12=6.12.999-1~deb12u1" in err, err
    assert f"refresh the series for Linux {found}" in err, err
    assert "kernel-patches/BASE" in err
    assert os.path.islink(build / "pristine")  # the shared tree was only read
    # the same patch against the version it claims: the patch is broken
    (kp / "BASE").write_text(f"package linux-source-6.12\nkernel {found}\n")
    r = subprocess.run([str(repo / "scripts" / "kernel.sh"), "check-version"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 1, r.stderr
    assert "warning" not in r.stderr
    assert "0001-bad.patch does not apply" in r.stderr
    assert "the patch itself is broken" in r.stderr
