"""dcnet/config.py: every DCNET_* variable the code reads is declared once;
Python reads them through config.get(); values are typed and checked; a
settings file sits under the environment."""
import ast
import os
import re
import subprocess
import sys

import pytest

from dcnet import ROOT, config

# where the harness's code lives (tests/host sets made-up names on purpose)
CODE_DIRS = ("dcnet", "bench", "testbed", "scripts", os.path.join("tests", "guest"))
CODE_EXT = (".py", ".sh")
# names that look like settings but are not environment variables
NOT_SETTINGS = {"DCNET_DEV"}     # testbed/physical/cloudlab/profile.py: an Ansible variable's value


def code_files():
    out = [os.path.join(ROOT, "Makefile")]
    for d in CODE_DIRS:
        for dirpath, _dirs, names in os.walk(os.path.join(ROOT, d)):
            out += [os.path.join(dirpath, n) for n in sorted(names) if n.endswith(CODE_EXT)]
    return out


def mentioned(path):
    with open(path, errors="replace") as f:
        return set(re.findall(r"\bDCNET_[A-Z0-9_]*[A-Z0-9]\b", f.read()))


def test_every_variable_the_code_names_is_declared():
    bad = []
    for path in code_files():
        for name in sorted(mentioned(path) - NOT_SETTINGS):
            if name not in config.BY_NAME:
                bad.append(f"{os.path.relpath(path, ROOT)}: {name}")
    assert not bad, ("DCNET_* variables the code names but dcnet/config.py does not declare "
                     "(declare them in SETTINGS, with type, default and a line of doc):\n" + "\n".join(bad))


def env_reads(source, path="<src>"):
    """(line, name) of each read of a DCNET_* variable straight from the
    environment: os.environ.get/["..."]/os.getenv/.get on os.environ"""
    tree = ast.parse(source, path)
    out = []

    def is_environ(node):
        return (isinstance(node, ast.Attribute) and node.attr == "environ") or \
               (isinstance(node, ast.Name) and node.id == "environ")

    def const(node):
        return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = const(node.args[0]) if node.args else None
            if name and name.startswith("DCNET_"):
                if isinstance(f, ast.Attribute) and f.attr in ("get", "pop", "setdefault") and is_environ(f.value) \
                        and f.attr == "get":
                    out.append((node.lineno, name))
                elif isinstance(f, ast.Attribute) and f.attr == "getenv":
                    out.append((node.lineno, name))
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and is_environ(node.value):
            name = const(node.slice)
            if name and name.startswith("DCNET_"):
                out.append((node.lineno, name))
    return out


def test_python_reads_settings_through_the_config_object():
    bad = []
    for path in code_files():
        if not path.endswith(".py") or path == os.path.join(ROOT, "dcnet", "config.py"):
            continue
        with open(path) as f:
            src = f.read()
        for line, name in env_reads(src, path):
            bad.append(f"{os.path.relpath(path, ROOT)}:{line}: {name}")
    assert not bad, "read with dcnet.config.get(), not from os.environ:\n" + "\n".join(bad)


def test_the_read_check_sees_each_form():
    src = ('import os\nfrom os import environ\n'
           'a = os.environ.get("DCNET_A", "x")\nb = os.environ["DCNET_B"]\nc = os.getenv("DCNET_C")\n'
           'd = environ["DCNET_D"]\n'
           'os.environ["DCNET_E"] = "1"\nenv = dict(os.environ, DCNET_F="")\nos.environ.pop("DCNET_G", None)\n')
    assert [n for _, n in env_reads(src)] == ["DCNET_A", "DCNET_B", "DCNET_C", "DCNET_D"]


def test_shell_reads_name_their_script():
    """a setting a shell script reads lists that script (the docs say where it acts)"""
    bad = []
    for path in code_files():
        if not path.endswith(".sh"):
            continue
        rel = os.path.relpath(path, ROOT)
        with open(path) as f:
            for name in set(re.findall(r"\$\{?(DCNET_[A-Z0-9_]+)", f.read())):
                if name in config.BY_NAME and rel not in config.BY_NAME[name].read_by:
                    bad.append(f"{rel}: {name}")
    assert not bad, "add the script to the setting's read_by:\n" + "\n".join(bad)


def test_every_setting_has_a_doc_and_a_known_kind():
    for s in config.SETTINGS:
        assert s.doc and "\n" not in s.doc, s.name
        assert s.kind in ("str", "int", "float", "bool", "choice", "path", "words"), s.name
        assert s.group in config.GROUPS, s.name
        assert (s.kind == "choice") == bool(s.choices), s.name
        if s.default is not None and s.kind != "words":
            assert s.parse(s.default if not isinstance(s.default, bool) else s.default) == s.default, s.name
    assert len({s.name for s in config.SETTINGS}) == len(config.SETTINGS)


def test_values_are_typed_and_checked(monkeypatch):
    monkeypatch.setenv("DCNET_CHECK_VMS", "3")
    assert config.get("DCNET_CHECK_VMS") == 3
    monkeypatch.setenv("DCNET_TIMEOUT_SCALE", "2.5")
    assert config.get("DCNET_TIMEOUT_SCALE") == 2.5
    monkeypatch.setenv("DCNET_VM_PROGRESS", "0")
    assert config.get("DCNET_VM_PROGRESS") is False
    monkeypatch.setenv("DCNET_KUNIT", "")
    assert config.get("DCNET_KUNIT") == []         # empty: no KUnit module
    monkeypatch.delenv("DCNET_KUNIT")
    assert config.get("DCNET_KUNIT") is None       # unset: the default list
    monkeypatch.setenv("DCNET_CLOCK", "")
    assert config.get("DCNET_CLOCK") is None       # empty is unset
    for name, value, want in [("DCNET_CLOCK", "fast", "want one of virtual, real"),
                              ("DCNET_CLOCK", "virtal", "did you mean 'virtual'"),
                              ("DCNET_ICOUNT_SHIFT", "-11", "out of range, want from -10 to 10"),
                              ("DCNET_CHECK_VMS", "two", "want an integer"),
                              ("DCNET_CHECK_VMS", "1.5", "want an integer"),
                              ("DCNET_TIMEOUT_SCALE", "nan", "want a number"),
                              ("DCNET_VM_PROGRESS", "maybe", "want 1 or 0")]:
        monkeypatch.setenv(name, value)
        with pytest.raises(SystemExit, match=re.escape(f"{name}={value!r}") + ".*" + re.escape(want)):
            config.get(name)
        monkeypatch.delenv(name)


def test_a_settings_file_sits_under_the_environment(tmp_path, monkeypatch):
    f = tmp_path / "dcnet.toml"
    f.write_text('check_vms = 3\nDCNET_TIMEOUT_SCALE = 2\nvm_progress = false\nclock = "real"\n')
    env = {"DCNET_CLOCK": "virtual"}
    try:
        assert config.load(str(f), env=env) == str(f)
        # the file's values are exported for what the command starts; the environment wins
        assert env["DCNET_CHECK_VMS"] == "3" and env["DCNET_VM_PROGRESS"] == "0"
        assert env["DCNET_CLOCK"] == "virtual"
        assert config.get("DCNET_CHECK_VMS", env={}) == 3      # from the file itself
        assert config.get("DCNET_TIMEOUT_SCALE", env={}) == 2.0
        assert config.get("DCNET_CLOCK", env=env) == "virtual"
    finally:
        config.load(None, env={})


def test_a_bad_settings_file_names_the_key(tmp_path):
    for text, want in [('chek_vms = 3\n', "did you mean 'DCNET_CHECK_VMS'"),
                       ('check_vms = "many"\n', "DCNET_CHECK_VMS='many'"),
                       ('clock = [1]\n', "want a string"),
                       ('check_vms = true\n', "not a boolean"),
                       ('clock = \n', "not TOML")]:
        f = tmp_path / "bad.toml"
        f.write_text(text)
        with pytest.raises(config.ConfigError, match=re.escape(want)):
            config.read_file(str(f))


def test_the_cli_refuses_a_bad_value_before_running_anything(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT, DCNET_CLOCK="fast")
    r = subprocess.run([sys.executable, "-m", "dcnet", "testbed", "--help"], cwd=ROOT, env=env,
                       capture_output=True, text=True)
    assert r.returncode != 0 and "DCNET_CLOCK='fast' (environment): want one of virtual, real" in r.stderr
    f = tmp_path / "c.toml"
    f.write_text("repeat = 0\n")
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-m", "dcnet", "--config", str(f), "config"], cwd=ROOT, env=env,
                       capture_output=True, text=True)
    assert r.returncode != 0 and "DCNET_REPEAT=0" in r.stderr and "at least 1" in r.stderr
    f.write_text("repeat = 2\n")
    r = subprocess.run([sys.executable, "-m", "dcnet", "--config", str(f), "config"], cwd=ROOT, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0 and re.search(r"DCNET_REPEAT\s+2\s+\(file\)", r.stdout), r.stdout + r.stderr


def test_an_unknown_variable_is_named_with_the_closest_setting(capsys):
    config.load(None, env={"DCNET_CHEK_VMS": "2"})
    assert "DCNET_CHEK_VMS is not a setting" in capsys.readouterr().err
    config.load(None, env={})
