"""The sealed guest's image tree (dcnet/host/sealed.py's Tree): a file
reached through a symlinked directory, as a build directory's iproute2
linked to the shared cache or a worktree's .venv link, goes into the
image where the link points, and the host's file is left alone."""
import os

from dcnet.host import sealed


def test_file_through_a_symlinked_directory(tmp_path):
    host = tmp_path / "host"
    (host / "cache" / "iproute2" / "tc").mkdir(parents=True)
    tc = host / "cache" / "iproute2" / "tc" / "tc"
    tc.write_text("tc binary")
    (host / "build").mkdir()
    os.symlink(host / "cache" / "iproute2", host / "build" / "iproute2")
    root = tmp_path / "image"
    root.mkdir()
    t = sealed.Tree(str(root))
    # before the fix: shutil.SameFileError (the copy's destination resolved
    # through the link in the image to the host's own file)
    t.add(str(host / "build" / "iproute2" / "tc" / "tc"))
    img = str(root) + str(host)
    assert os.path.islink(img + "/build/iproute2")
    assert os.readlink(img + "/build/iproute2") == str(host / "cache" / "iproute2")
    copy = img + "/cache/iproute2/tc/tc"
    assert os.path.isfile(copy) and not os.path.islink(copy)
    assert open(copy).read() == "tc binary"
    assert not os.path.samefile(copy, tc)
    assert tc.read_text() == "tc binary"


def test_plain_paths_unchanged(tmp_path):
    f = tmp_path / "host" / "a" / "b.txt"
    f.parent.mkdir(parents=True)
    f.write_text("x")
    root = tmp_path / "image"
    root.mkdir()
    sealed.Tree(str(root)).add(str(f))
    assert (root / str(f).lstrip("/")).read_text() == "x"
