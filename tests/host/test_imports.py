"""The harness is one package, dcnet, with no import cycles among its
modules and no search-path edits anywhere in the repository: the host
imports dcnet from the venv (pyproject.toml, an editable install), the
guest from PYTHONPATH (dcnet/host/vmrun.py's guest script,
tests/guest/run-in-guest.sh).

Imports are read with ast, module-level and function-local ones alike: a
cycle hidden in a function body still means that neither module is below
the other."""
import ast
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PKG = "dcnet"
# the interpreter's module search list, spelled so that this file does not
# contain the name it looks for
SEARCH = "sys" + "." + "path"


def package_modules(root, pkg=PKG):
    """{module name: file} of every module of the package under root"""
    mods = {}
    for dirpath, dirs, files in os.walk(os.path.join(root, pkg)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        rel = os.path.relpath(dirpath, root).replace(os.sep, ".")
        for f in files:
            if f.endswith(".py"):
                name = rel if f == "__init__.py" else f"{rel}.{f[:-3]}"
                mods[name] = os.path.join(dirpath, f)
    return mods


def imports_of(name, path, mods):
    """the package's modules that module name imports anywhere in its file:
    `import a.b`, `from a import b` (b a module, or a name in a), relative
    imports; function-local ones too"""
    is_pkg = path.endswith("__init__.py")
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in mods:
                    out.add(a.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            for a in node.names:
                sub = f"{target}.{a.name}"
                if sub in mods:
                    out.add(sub)
                elif target in mods:
                    out.add(target)
    out.discard(name)
    return out


def cycles(graph):
    """the strongly connected components with more than one module (or a
    module importing itself), each sorted: Tarjan's algorithm"""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def import_graph(root=ROOT, pkg=PKG):
    mods = package_modules(root, pkg)
    return {m: imports_of(m, p, mods) for m, p in mods.items()}


def python_files(root=ROOT):
    """the repository's Python files (tracked and new ones; not .venv)"""
    r = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "*.py"],
                       cwd=root, capture_output=True)
    if r.returncode == 0:
        return sorted(os.path.join(root, f) for f in r.stdout.decode().split("\0")
                      if f and os.path.exists(os.path.join(root, f)))
    out = []
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".git", ".venv", "__pycache__")]
        out += [os.path.join(dirpath, f) for f in files if f.endswith(".py")]
    return sorted(out)


def is_search_list(node):
    return (isinstance(node, ast.Attribute) and node.attr == "path"
            and isinstance(node.value, ast.Name) and node.value.id == "sys")


def path_writes(path):
    """[(line, what)] of every change to the module search list in a
    Python file: a call of one of its methods, an assignment to it or to
    an item or slice of it, `from sys import path`, site.addsitedir(),
    and the same in code held in a string (a driver written to a file)"""
    with open(path) as f:
        src = f.read()
    out = []
    for node in ast.walk(ast.parse(src, path)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if is_search_list(node.func.value):
                out.append((node.lineno, f"{SEARCH}.{node.func.attr}()"))
            elif node.func.attr == "addsitedir":
                out.append((node.lineno, "site.addsitedir()"))
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if is_search_list(t) or (isinstance(t, ast.Subscript) and is_search_list(t.value)):
                    out.append((node.lineno, f"assignment to {SEARCH}"))
        elif isinstance(node, ast.ImportFrom) and node.module == "sys":
            if any(a.name == "path" for a in node.names):
                out.append((node.lineno, "from sys import path"))
    pat = re.compile(r"\b" + re.escape(SEARCH) + r"\s*(\.\s*(insert|append|extend|remove|pop|clear)\b|\[[^\]]*\]\s*=|[+]?=(?!=))")
    for i, line in enumerate(src.splitlines(), 1):
        if pat.search(line) and not any(n == i for n, _ in out):
            out.append((i, f"{SEARCH} changed (in code or in a string of code)"))
    return sorted(out)


def test_no_import_cycle_in_the_package():
    graph = import_graph()
    assert "dcnet.testbed.fabric" in graph and "dcnet.host.vmrun" in graph, sorted(graph)
    found = cycles(graph)
    assert not found, "import cycles among dcnet's modules: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_layers_import_downwards():
    """the namespace primitives import nothing of the package but the
    settings (dcnet.config, which imports nothing of it); presto and
    netlab build on them, not on the fabric; no bench imports another
    bench (what they share is a module of its own) or the testbed's driver"""
    graph = import_graph()
    assert graph["dcnet.testbed.ns"] <= {"dcnet.config"}
    assert graph["dcnet.config"] <= {"dcnet"}
    for m in ("presto", "netlab"):
        assert "dcnet.testbed.fabric" not in graph[f"dcnet.testbed.{m}"], m
        assert "dcnet.testbed.ns" in graph[f"dcnet.testbed.{m}"], m
    benches = ("d2tcp", "htb", "fastlane", "fastlane_clos")
    for b in benches:
        assert "dcnet.testbed.run" not in graph[f"dcnet.bench.{b}"], b
        assert not {f"dcnet.bench.{o}" for o in benches} & graph[f"dcnet.bench.{b}"], b


def test_the_cycle_check_sees_function_local_imports(tmp_path):
    """a cycle through imports inside functions, and through a relative
    import, is found; the same package without it is clean"""
    pkg = tmp_path / "cyc"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "low.py").write_text("import os\n")
    (pkg / "sub" / "a.py").write_text("def f():\n    from cyc.sub import b\n    return b\n")
    (pkg / "sub" / "b.py").write_text("from cyc import low\n\n\ndef g():\n    from . import a\n    return a\n")
    graph = import_graph(str(tmp_path), "cyc")
    assert graph["cyc.sub.a"] == {"cyc.sub.b"}
    assert graph["cyc.sub.b"] == {"cyc.low", "cyc.sub.a"}
    assert cycles(graph) == [["cyc.sub.a", "cyc.sub.b"]]
    (pkg / "sub" / "b.py").write_text("from cyc import low\n")
    assert cycles(import_graph(str(tmp_path), "cyc")) == []


def test_no_search_path_writes_in_the_repository():
    files = python_files()
    assert any(f.endswith(os.path.join("dcnet", "testbed", "fabric.py")) for f in files)
    bad = [f"{os.path.relpath(f, ROOT)}:{n}: {what}" for f in files for n, what in path_writes(f)]
    assert not bad, "the package is on the path by pyproject.toml and PYTHONPATH, not by edits:\n" + "\n".join(bad)


def test_the_search_path_check_sees_each_form(tmp_path):
    p = tmp_path / "x.py"
    forms = [f"import sys\n{SEARCH}.insert(0, 'a')\n", f"import sys\n{SEARCH}.append('a')\n",
             f"import sys\n{SEARCH}[:0] = ['a']\n", f"import sys\n{SEARCH} = ['a']\n",
             f"import sys\n{SEARCH} += ['a']\n", "from sys import path\npath.append('a')\n",
             "import site\nsite.addsitedir('a')\n",
             f"D = '''\nimport sys\n{SEARCH}[:0] = ['.']\n'''\n"]
    for src in forms:
        p.write_text(src)
        assert path_writes(str(p)), src
    p.write_text(f"import sys\nprint({SEARCH})\nx = {SEARCH}[0]\nif 'a' in {SEARCH}:\n    pass\n")
    assert path_writes(str(p)) == []


def test_the_guest_finds_the_package_by_pythonpath(tmp_path, monkeypatch):
    """the VM runner's guest script (9p and sealed guests alike) exports
    PYTHONPATH as the repository, and run-in-guest.sh keeps it"""
    from dcnet.host import vmrun
    vng = tmp_path / "vng"
    vng.write_text("#!/bin/sh\nfor a; do case $a in sh\\ *) s=${a#sh };; esac; done\n"
                   "out=$(sed -n 's/^export DCNET_OUT=//p' $s); echo 0 > $out/status\n")
    vng.chmod(0o755)
    kdir = tmp_path / "k"
    (kdir / "arch/x86/boot").mkdir(parents=True)
    (kdir / "arch/x86/boot/bzImage").write_text("")
    monkeypatch.setenv("DCNET_VNG", str(vng))
    monkeypatch.setenv("DCNET_VM_ROOT", "9p")
    assert vmrun.run(str(kdir), str(tmp_path / "out"), ["true"], timeout=20, cpus=1,
                     memory="1G", verbose=False, clock="real") == 0
    script = (tmp_path / "out" / "guest.sh").read_text()
    assert f"export PYTHONPATH={ROOT}\n" in script
    assert script.index("export PYTHONPATH") < script.index("cd ")
    rig = open(os.path.join(ROOT, "tests", "guest", "run-in-guest.sh")).read()
    assert "PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}" in rig and "-p dcnet.host.pytest_jsonl" in rig


def test_the_sealed_image_holds_the_package(tmp_path):
    """the sealed initramfs copies the repository's tracked files to their
    host paths: the package and the commands' shims are there, so the
    guest's PYTHONPATH finds the same modules as the host"""
    from dcnet.host import sealed
    t = sealed.Tree(str(tmp_path))
    sealed.add_repo(t)
    img = str(tmp_path) + ROOT
    for f in ("dcnet/__init__.py", "dcnet/testbed/ns.py", "dcnet/testbed/run.py", "dcnet/bench/calibrate.py",
              "dcnet/host/pytest_jsonl.py", "testbed/run.py", "bench/d2tcp.py", "pyproject.toml"):
        assert os.path.isfile(os.path.join(img, f)), f
    assert not os.path.exists(os.path.join(img, "docs"))
