"""dcnet.samples: --samples boots one measurement with different seeds and
reports each figure's median and range; a goal counts as met only where
every sample meets it."""
import argparse
import json
import os

import pytest

from dcnet import hostrun, samples


def test_sample_zero_is_the_plain_run(monkeypatch):
    # sample 0 adds nothing to the boot's environment (its image and seeds
    # are the plain run's), sample i moves QEMU's seed and every workload seed
    assert samples.env(0) == {}
    assert samples.env(3) == {"DCNET_SAMPLE": "3", "DCNET_VM_SEED": str(samples.QEMU_SEED + 3)}
    monkeypatch.delenv("DCNET_SAMPLE", raising=False)
    assert samples.seed(7) == 7
    monkeypatch.setenv("DCNET_SAMPLE", "2")
    assert samples.seed(7) == 7 + 2 * samples.STRIDE


def test_summary_median_and_range_pair_cells_by_name():
    rs = [{"rows": [{"scheme": "ecmp", "tput": t}, {"scheme": "optimal", "tput": 100.0}]} for t in (5.0, 9.0, 7.0)]
    rs[1]["rows"].reverse()
    rows = {r["figure"]: r for r in samples.summarise(rs)}
    assert rows["rows[ecmp].tput"]["median"] == 7.0
    assert (rows["rows[ecmp].tput"]["lo"], rows["rows[ecmp].tput"]["hi"]) == (5.0, 9.0)
    assert rows["rows[optimal].tput"]["median"] == 100.0
    even = {r["figure"]: r for r in samples.summarise([{"x": 1.0}, {"x": 4.0}, {"x": 2.0}, {"x": 3.0}])}
    assert even["x"]["median"] == 2.5


def test_goal_met_only_where_every_sample_meets_it():
    def res(*st):
        return {"goals": [dict(key=k, goal=k, status=s) for k, s in zip(("a", "b", "c"), st)]}
    gs = {g["key"]: g["verdict"] for g in samples.goal_verdicts(
        [res("met", "not met", "met"), res("met", "not met", "not met"), res("met", "not met", "met")])}
    assert gs == {"a": "met", "b": "not met", "c": "undecided (2 of 3 met)"}
    gs = {g["key"]: g["verdict"] for g in samples.goal_verdicts([res("met"), res("not measured")])}
    assert gs == {"a": "not measured in 1 of 2 samples"}


def _args(**kw):
    return argparse.Namespace(**dict(dict(repeat=1, samples=1, reanalyse=None), **kw))


def test_plan_dirs_and_seeds(tmp_path):
    outs, env_for = hostrun.plan(_args(samples=3), str(tmp_path))
    assert [os.path.basename(o) for o in outs] == ["sample1", "sample2", "sample3"]
    assert env_for(outs[0]) == {} and env_for(outs[2])["DCNET_SAMPLE"] == "2"
    outs, env_for = hostrun.plan(_args(repeat=2), str(tmp_path))
    assert [os.path.basename(o) for o in outs] == ["run1", "run2"] and env_for is None
    outs, env_for = hostrun.plan(_args(), str(tmp_path))
    assert outs == [str(tmp_path)] and env_for is None
    with pytest.raises(SystemExit, match="not both"):
        hostrun.plan(_args(repeat=2, samples=2), str(tmp_path))


def test_samples_section_from_reanalysed_raw_data(tmp_path, capsys):
    # a --samples run's directory re-analysed: sample1 report and plots in
    # out/, the Samples section appended, samples.json with the verdicts
    src = tmp_path / "src"
    for i, t in enumerate((8e6, 9e6, 10e6)):
        d = src / f"sample{i + 1}"
        d.mkdir(parents=True)
        (d / "raw.json").write_text(json.dumps({"tput_bps": t, "ok": i != 1}))

    def analyse(raw):
        return {"elephant_tput_bps": raw["tput_bps"],
                "goals": [dict(key="tput", goal="tput >= 8.5 Mbit/s",
                               status="met" if raw["tput_bps"] >= 8.5e6 else "not met")]}

    def render(raw, res, out):
        with open(os.path.join(out, "report.md"), "w") as f:
            f.write("# bench\n\nbody\n")
    hostrun.reanalyse(str(src), str(tmp_path / "out"), analyse, render, "bench-x")
    out = tmp_path / "out"
    rep = (out / "report.md").read_text()
    assert "## Samples" in rep and "undecided (2 of 3 met)" in rep
    assert "| `elephant_tput_bps` | 9e+06 | 8e+06 - 1e+07 |" in rep
    meta = json.loads((out / "samples.json").read_text())
    assert meta["samples"] == 3 and meta["goals"][0]["verdict"] == "undecided (2 of 3 met)"
    assert "bench-x: 3 samples; goals: tput undecided (2 of 3 met)" in capsys.readouterr().out
