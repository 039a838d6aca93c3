"""Partial results out of a sealed guest (dcnet/partial.py): a run that
ends without its results keeps the last intact copy of each file the guest
published on its console; the console and the live output show one line
per block instead of its base64."""
import json
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dcnet import partial
from dcnet.host import vmrun


def publish(tmp_path, monkeypatch, console, name, obj):
    src = tmp_path / "src.json"
    src.write_text(json.dumps(obj))
    monkeypatch.setenv("DCNET_SEALED", "1")
    assert partial.publish(str(src), name, console=str(console))


def test_the_last_intact_block_of_each_name_is_kept(tmp_path, monkeypatch):
    console = tmp_path / "console.serial"
    console.write_bytes(b"sealed: booted\nguest line 1\n")
    publish(tmp_path, monkeypatch, console, "raw.partial.json", {"runs": [1]})
    with open(console, "ab") as f:
        f.write(b"guest line 2\n")
    publish(tmp_path, monkeypatch, console, "raw.partial.json", {"runs": [1, 2]})
    publish(tmp_path, monkeypatch, console, "sub/other.json", {"x": 1})
    # a third copy, cut off by the end of the run (no END line)
    data = console.read_bytes()
    cut = partial.block("raw.partial.json", json.dumps({"runs": [1, 2, 3], "x": list(range(3000))}).encode())
    console.write_bytes(data + cut[:len(cut) // 2])
    out = tmp_path / "out"
    out.mkdir()
    assert partial.keep(str(console), str(out)) == ["raw.partial.json", "sub/other.json"]
    assert json.loads((out / "raw.partial.json").read_text()) == {"runs": [1, 2]}
    assert json.loads((out / "sub" / "other.json").read_text()) == {"x": 1}
    text = console.read_text()
    assert "guest line 1" in text and "guest line 2" in text and partial.BEGIN not in text
    assert text.count("[partial result raw.partial.json:") == 3 and "damaged]" in text


def test_damaged_and_hostile_blocks_are_refused(tmp_path, monkeypatch):
    good = partial.block("raw.partial.json", b'{"runs": []}')
    lines = good.split(b"\n")
    # one base64 line changed: the digest no longer matches
    bad = b"\n".join(lines[:2] + [lines[2][:-4] + b"AAAA"] + lines[3:])
    evil = partial.block("../../etc/passwd", b"root::0:0::/:/bin/sh\n")
    files, rest = partial.extract(b"a\n" + bad + b"b\n" + evil + good + b"c\n")
    assert files == {"raw.partial.json": b'{"runs": []}'}
    assert b"etc/passwd: " in rest and rest.count(b"damaged]") == 2
    for name in ("/abs", "../x", "a/../b", "", "a//b"):
        assert not partial.valid_name(name)
        monkeypatch.setenv("DCNET_SEALED", "1")
        src = tmp_path / "f"
        src.write_text("x")
        with pytest.raises(ValueError):
            partial.publish(str(src), name, console=str(tmp_path / "c"))


def test_publish_does_nothing_outside_a_sealed_guest(tmp_path, monkeypatch):
    monkeypatch.delenv("DCNET_SEALED", raising=False)
    src = tmp_path / "f"
    src.write_text("x")
    assert not partial.publish(str(src), "f", console=str(tmp_path / "c"))
    assert not (tmp_path / "c").exists()


def test_live_output_shows_one_line_per_block(tmp_path, capsys):
    serial = tmp_path / "console.serial"
    serial.write_bytes(b"cell 1 done\n" + partial.block("raw.partial.json", b"{}" * 2000) + b"cell 2 done\n")
    f = vmrun.Follow(str(serial))
    f.poll()
    err = [x for x in capsys.readouterr().err.splitlines() if x != "guest: "]
    assert err[0] == "guest: cell 1 done" and err[-1] == "guest: cell 2 done"
    assert len(err) == 3 and err[1].startswith("guest: [partial result raw.partial.json ")


def test_the_guest_script_marks_a_sealed_guest():
    assert "DCNET_SEALED" in vmrun.NOT_PASSED
    src = open(os.path.join(ROOT, "dcnet", "host", "vmrun.py")).read()
    assert '"export DCNET_SEALED=1\\n" if sealed_root' in src
    run_src = open(os.path.join(ROOT, "dcnet", "testbed", "run.py")).read()
    assert 'partial.publish(part, "raw.partial.json")' in run_src
