"""The settings: every environment variable the harness reads, declared
once with its type, default, check and a line of documentation.

Where a value comes from, first that applies:

  1. the environment (DCNET_CLOCK=real make testbed);
  2. the settings file: `python -m dcnet --config FILE`, else DCNET_CONFIG,
     else dcnet.toml in the repository when it exists.  TOML, one key per
     setting, named as the variable or in lower case without DCNET_
     (`clock = "real"`, `check_vms = 3`);
  3. the default below.

Code reads a setting with get(NAME); a value that does not parse or check
stops the command with the variable's name, the value and what it takes.
load() (run by `python -m dcnet` before any command) checks every setting
that is set, and exports the file's values into the environment, so that
the commands it starts (the VM runner, scripts, the guest, which receives
the DCNET_* settings through its script) see the same values and parse
them with this module.  docs/configuration.md is generated from SETTINGS
(`make docs-tables`).
"""
import difflib
import os
import sys
from dataclasses import dataclass, field

from dcnet import ROOT


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class Setting:
    name: str               # the environment variable
    kind: str               # str, int, float, bool, choice, path, words
    default: object         # the value when unset (None: unset, the reader decides)
    doc: str                # one line
    group: str = "host"     # host, vm, check, guest, build, packages, physical, internal
    choices: tuple = ()     # kind choice: the values it takes
    lo: float = None        # int/float: the smallest value
    hi: float = None        # int/float: the largest value
    read_by: tuple = field(default=())   # shell scripts that read it (the rest: Python, through get())

    def parse(self, raw, source="environment"):
        """the typed value of raw (a string from the environment or a
        value from the file), or ConfigError"""
        where = f"{self.name}={raw!r} ({source})"
        v = raw.strip() if isinstance(raw, str) else raw
        if self.kind in ("str", "path"):
            return str(v)
        if self.kind == "words":
            return str(v).split()
        if self.kind == "bool":
            if isinstance(v, bool):
                return v
            if str(v).lower() in ("1", "yes", "true", "on"):
                return True
            if str(v).lower() in ("0", "no", "false", "off", ""):
                return False
            raise ConfigError(f"{where}: want 1 or 0 (also yes/no, true/false, on/off)")
        if self.kind == "choice":
            if str(v) not in self.choices:
                close = difflib.get_close_matches(str(v), self.choices, 1)
                raise ConfigError(f"{where}: want one of {', '.join(self.choices)}"
                                  + (f" (did you mean {close[0]!r}?)" if close else ""))
            return str(v)
        if self.kind in ("int", "float"):
            try:
                if self.kind == "int":
                    if isinstance(v, float) or isinstance(v, bool):
                        raise ValueError
                    n = int(v)
                else:
                    n = float(v)
                    if n != n or n in (float("inf"), float("-inf")):
                        raise ValueError
            except (TypeError, ValueError):
                raise ConfigError(f"{where}: want {'an integer' if self.kind == 'int' else 'a number'}"
                                  + self._range()) from None
            if (self.lo is not None and n < self.lo) or (self.hi is not None and n > self.hi):
                raise ConfigError(f"{where}: out of range, want{self._range()}")
            return n
        raise ConfigError(f"{self.name}: unknown kind {self.kind!r}")

    def _range(self):
        fmt = (lambda x: f"{x:g}")
        if self.lo is not None and self.hi is not None:
            return f" from {fmt(self.lo)} to {fmt(self.hi)}"
        if self.lo is not None:
            return f" of at least {fmt(self.lo)}"
        if self.hi is not None:
            return f" of at most {fmt(self.hi)}"
        return ""


S = Setting
SETTINGS = [
    # where things are
    S("BUILD", "path", None, "kernel trees, objects, tc/ss, OVS and QEMU builds "
      "(default: $XDG_CACHE_HOME/dcnet/build, else ~/.cache/dcnet/build)", "host"),
    S("RESULTS", "path", os.path.join(ROOT, "results"), "where the commands write their results "
      "(default: the repository's results/)", "host"),
    S("DCNET_CONFIG", "path", None, "the settings file when --config names none "
      "(default: dcnet.toml in the repository, if present)", "host"),
    # measurements
    S("DCNET_CLOCK", "choice", None, "the guest's clock: virtual (QEMU icount; the default of "
      "benches, demo, testbed) or real (plain TCG; the default of vmrun and check)", "host",
      choices=("virtual", "real")),
    S("DCNET_REPEAT", "int", 1, "boots of one measurement (same seeds); above 1 the report "
      "gives every figure's spread", "host", lo=1),
    S("DCNET_SAMPLES", "int", 1, "boots of one measurement with different seeds (QEMU's and "
      "every workload's); above 1 the report gives every figure's median and range", "host", lo=1),
    S("DCNET_TIMEOUT_SCALE", "float", 1.0, "multiplies every wall-time bound (boots, waits "
      "in tests); for a loaded host", "host", lo=0.01),
    S("DCNET_ICOUNT_SHIFT", "int", 0, "virtual time at 2^S ns per instruction; negative "
      "dilates time (the patched QEMU, make qemu)", "vm", lo=-10, hi=10),
    S("DCNET_QEMU", "path", None, "the qemu-system-x86_64 to run (default: the system's; "
      "the patched build for a negative shift)", "vm"),
    S("DCNET_VM_CPUS", "int", None, "the guest's vCPUs (default: 1 in virtual time, 2 in "
      "real time)", "vm", lo=1),
    S("DCNET_VM_ROOT", "choice", None, "the guest's root: sealed (an initramfs; the default "
      "in virtual time) or 9p (the host's, virtme-ng; the default in real time)", "vm",
      choices=("sealed", "9p")),
    S("DCNET_VM_SEED", "int", None, "QEMU's -seed (the guest's RDRAND); sealed guests "
      "default to 1", "vm", lo=0),
    S("DCNET_VM_ACCEL", "choice", "tcg", "tcg, or kvm where nested KVM works", "vm",
      choices=("tcg", "kvm")),
    S("DCNET_VM_RR", "choice", "record", "QEMU's record mode in a sealed guest (off: "
      "without; timers may then fire a host-dependent few ns late)", "vm",
      choices=("record", "off")),
    S("DCNET_VM_APPEND", "words", "", "more kernel command-line arguments for a sealed guest", "vm"),
    S("DCNET_VM_PROGRESS", "bool", True, "print a sealed guest's output and per-cell progress "
      "while it runs (0: only at the end)", "vm"),
    S("DCNET_9P_CACHE", "choice", "loose", "the 9p root's cache mode (none: virtme-ng's "
      "own mount)", "vm", choices=("loose", "mmap", "fscache", "none")),
    S("DCNET_VNG", "path", None, "the virtme-ng (vng) to run (default: the venv's, else "
      "PATH's)", "vm"),
    # make check
    S("DCNET_CHECK_VMS", "int", 2, "debug VMs make check splits the guest suite over", "check",
      lo=1, hi=16),
    S("DCNET_CHECK_TIMEOUT", "int", 4800, "wall-time bound of each make check VM, seconds",
      "check", lo=60),
    S("DCNET_TEST_TIMEOUT", "int", 600, "bound of one guest test, seconds (pytest-timeout)",
      "check", lo=1, read_by=("tests/guest/run-in-guest.sh",)),
    S("DCNET_KUNIT", "words", None, "the KUnit modules the guest loads (default: "
      "tests/guest/kunit-modules; empty: none)", "check", read_by=("tests/guest/run-in-guest.sh",)),
    # the guest tests
    S("DCNET_TESTBED_QUICK", "bool", False, "leave out the two slowest testbed guest tests",
      "guest"),
    S("DCNET_REQUIRE_OVS", "bool", False, "fail the Presto guest tests when Open vSwitch is "
      "missing, instead of skipping them", "guest"),
    S("DCNET_OVS_KMOD", "bool", False, "run Open vSwitch's kernel-datapath testsuite (keyword "
      "flowcell) in the guest, tests/guest/test_ovs_kmod.py: 6 min or more in a TCG guest", "guest"),
    S("DCNET_D2TCP_V6", "bool", True, "run the D2TCP guest tests over IPv6 too", "guest"),
    S("DCNET_KSRC", "path", None, "a kernel source tree for the tdc tests (default: the "
      "newest under ~/.cache/dcnet)", "guest"),
    S("DCNET_OVS", "path", None, "the Open vSwitch install (default: $BUILD/ovs-install)",
      "guest"),
    S("DCNET_OVS_RUNDIR", "path", "/tmp", "where the guest's OVS daemons keep their "
      "databases and sockets", "guest"),
    # set by the harness for what it starts
    S("DCNET_OUT", "path", None, "the guest's results directory (set by the VM runner)",
      "internal", read_by=("tests/guest/run-in-guest.sh", "tests/guest/loop_routed_fastlane.sh",
                            "testbed/physical/selftest.sh")),
    S("DCNET_SEALED", "bool", False, "1 in a sealed guest (set by the VM runner)", "internal"),
    S("DCNET_SAMPLE", "int", 0, "the sample a boot runs: every workload and multipath-hash seed "
      "+ 1009 times it (set by --samples)", "internal", lo=0),
    S("DCNET_TC", "path", "tc", "the patched tc (set by the VM runner to $BUILD's)", "internal",
      read_by=("bench/vtprobe.sh", "bench/rxcost.sh", "testbed/physical/selftest.sh")),
    S("DCNET_SS", "path", "ss", "the patched ss (set by the VM runner to $BUILD's)", "internal"),
    S("DCNET_TOOLBOX_DISK", "path", None, "the toolbox disk a 9p guest unpacks (set by the "
      "VM runner)", "internal"),
    S("DCNET_JSONL", "path", None, "the JSON-lines file of the guest's pytest events (set "
      "by tests/guest/run-in-guest.sh)", "internal"),
    S("DCNET_KERNEL_LOCKED", "bool", False, "set by scripts/kernel.sh while it holds its lock",
      "internal", read_by=("scripts/kernel.sh",)),
    # builds and packages (read by the shell scripts)
    S("DCNET_DEBUG_INFO", "bool", False, "keep debug info in the packaged kernel", "build",
      read_by=("scripts/kernel.sh",)),
    S("DCNET_DEBIAN_CONFIG_DIR", "path", "/usr/src/linux-config-6.12", "Debian's kernel "
      "configurations (linux-config-6.12)", "build", read_by=("scripts/kernel.sh",)),
    S("DCNET_AUTHOR_NAME", "str", None, "author of make series' patches (default: git "
      "config user.name)", "build", read_by=("scripts/series.sh",)),
    S("DCNET_AUTHOR_EMAIL", "str", None, "e-mail of make series' patches (default: git "
      "config user.email)", "build", read_by=("scripts/series.sh",)),
    S("DCNET_PKG_FLAVOR", "choice", "hardware", "the kernel make packages builds", "packages",
      choices=("hardware", "release", "vm"), read_by=("scripts/packages.sh",)),
    S("DCNET_PKG_REVISION", "int", 1, "N of the packages' +dcnetN version suffix", "packages",
      lo=1, read_by=("scripts/packages.sh", "scripts/kernel.sh")),
    S("DCNET_PKG_FORCE", "bool", False, "rebuild packages whose inputs did not change",
      "packages", read_by=("scripts/packages.sh",)),
    S("DCNET_APT_KEY", "str", None, "gpg key that signs the apt repository (default: unsigned)",
      "packages", read_by=("scripts/packages.sh",)),
    # the physical path (Ansible) and its VM cluster
    S("DCNET_PHYS_HOSTS", "int", 3, "hosts of the physical-path self-test", "physical", lo=2,
      read_by=("testbed/physical/selftest.sh",)),
    S("DCNET_PHYS_DURATION", "int", 3, "seconds per flow in the physical-path self-test",
      "physical", lo=1, read_by=("testbed/physical/selftest.sh",)),
    S("DCNET_PHYS_MODE", "choice", "tcp", "the self-test's transport", "physical",
      choices=("tcp", "mptcp"), read_by=("testbed/physical/selftest.sh",)),
    S("DCNET_PHYS_MICE", "int", 2, "50 KB mice per host beside the self-test's flows", "physical",
      lo=0, read_by=("testbed/physical/selftest.sh",)),
    S("DCNET_PHYS_KERNEL_CHECK", "bool", False, "run the kernel role in --check mode first",
      "physical", read_by=("testbed/physical/selftest.sh",)),
    S("DCNET_PHYS_PLOTS", "bool", None, "the self-test report's plots (default: off in "
      "virtme-ng)", "physical", read_by=("testbed/physical/selftest.sh",)),
    S("DCNET_PHYS_PRESTO_GRO", "bool", None, "the self-test's presto role (default: on when "
      "the kernel has the presto-gro family)", "physical", read_by=("testbed/physical/selftest.sh",)),
    S("DCNET_VMC_OUT", "path", None, "the VM cluster's directory (default: $RESULTS/vmcluster)",
      "physical", read_by=("testbed/physical/vmcluster.sh",)),
    S("DCNET_VMC_HOSTS", "int", 2, "machines of the VM cluster", "physical", lo=1,
      read_by=("testbed/physical/vmcluster.sh",)),
    S("DCNET_VMC_PRESTO", "bool", False, "Presto in the VM cluster's run: the playbook's controller role, "
      "the bridges connected to it, Presto GRO on the receivers", "physical",
      read_by=("testbed/physical/vmcluster.sh",)),
    S("DCNET_VMC_MEM", "int", 1536, "memory per cluster machine, MB", "physical", lo=256,
      read_by=("testbed/physical/vmcluster.sh",)),
    S("DCNET_VMC_DISK", "str", "6G", "disk size per cluster machine", "physical",
      read_by=("testbed/physical/vmcluster.sh",)),
    S("DCNET_VMC_MIRROR", "str", "http://deb.debian.org/debian", "the Debian mirror "
      "debootstrap uses", "physical", read_by=("testbed/physical/vmcluster.sh",)),
    S("DCNET_VMC_QEMU", "path", "qemu-system-x86_64", "the cluster's QEMU", "physical",
      read_by=("testbed/physical/vmcluster.sh",)),
    S("DCNET_VMC_REPO", "path", None, "the apt repository the cluster installs from "
      "(default: $BUILD/packages/apt)", "physical", read_by=("testbed/physical/vmcluster.sh",)),
    S("DCNET_VMC_BOOT_TIMEOUT", "int", 900, "seconds a cluster machine may take to boot",
      "physical", lo=1, read_by=("testbed/physical/vmcluster.sh",)),
]
del S
BY_NAME = {s.name: s for s in SETTINGS}
GROUPS = {"host": "Where things are, and measurements", "vm": "The VM runner",
          "check": "make check", "guest": "The guest tests", "internal": "Set by the harness itself",
          "build": "Builds", "packages": "Packages (make packages)",
          "physical": "The physical path (testbed/physical)"}
# what the settings file sets (name -> raw value) and where it is
_FILE = {}
_FILE_PATH = [None]


def setting(name):
    try:
        return BY_NAME[name]
    except KeyError:
        close = difflib.get_close_matches(name, BY_NAME, 1)
        raise KeyError(f"{name}: not a declared setting (dcnet/config.py)"
                       + (f"; did you mean {close[0]}?" if close else "")) from None


def _default(s):
    if s.name == "BUILD":
        return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                            "dcnet", "build")
    if s.kind == "words" and isinstance(s.default, str):
        return s.default.split()
    return s.default


def get(name, env=None):
    """the value of setting name: the environment's (env, default
    os.environ), else the settings file's, else the default.  An empty
    variable counts as unset, except for a words setting (DCNET_KUNIT=
    means none).  A bad value exits with a message that names it."""
    s = setting(name)
    env = os.environ if env is None else env
    raw, source = env.get(name), "environment"
    if raw is not None and raw.strip() == "" and s.kind != "words":
        raw = None
    if raw is None and name in _FILE:
        raw, source = _FILE[name], _FILE_PATH[0]
    if raw is None:
        return _default(s)
    try:
        return s.parse(raw, source)
    except ConfigError as e:
        sys.exit(f"dcnet: bad setting: {e}")


def is_set(name, env=None):
    env = os.environ if env is None else env
    return (env.get(name) not in (None, "") or (env.get(name) == "" and setting(name).kind == "words")
            or name in _FILE)


def _key(k):
    """a file key as the setting's name: DCNET_CLOCK, clock, build"""
    up = k.upper()
    if up in BY_NAME:
        return up
    if "DCNET_" + up in BY_NAME:
        return "DCNET_" + up
    close = difflib.get_close_matches(up if up.startswith("DCNET_") or up in ("BUILD", "RESULTS")
                                      else "DCNET_" + up, BY_NAME, 1)
    raise ConfigError(f"{k!r}: not a setting" + (f" (did you mean {close[0]!r}?)" if close else "")
                      + "; docs/configuration.md lists them")


def read_file(path):
    """{NAME: value} of a settings file, each key known and each value
    valid, or ConfigError naming the file"""
    import tomllib
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"{path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not TOML: {e}") from None
    out = {}
    for k, v in data.items():
        try:
            name = _key(k)
        except ConfigError as e:
            raise ConfigError(f"{path}: {e}") from None
        if isinstance(v, (dict, list)):
            raise ConfigError(f"{path}: {k}: want a string, number or boolean")
        if isinstance(v, bool) and BY_NAME[name].kind != "bool":
            raise ConfigError(f"{path}: {k}: want {BY_NAME[name].kind}, not a boolean")
        BY_NAME[name].parse(v, path)
        out[name] = v
    return out


def _text(v):
    return ("1" if v else "0") if isinstance(v, bool) else str(v)


def load(path=None, env=None):
    """Read the settings file (path, else DCNET_CONFIG, else ROOT/dcnet.toml
    if present), export what it sets and the environment does not, and
    check every setting that is set.  Raises ConfigError on the first bad
    one; warns of DCNET_* variables that are not settings."""
    env = os.environ if env is None else env
    path = path or env.get("DCNET_CONFIG") or None
    if path is None and os.path.exists(os.path.join(ROOT, "dcnet.toml")):
        path = os.path.join(ROOT, "dcnet.toml")
    _FILE.clear()
    _FILE_PATH[0] = path
    if path:
        _FILE.update(read_file(path))
        for k, v in _FILE.items():
            if env.get(k) in (None, ""):
                env[k] = _text(v)
        env["DCNET_CONFIG"] = os.path.abspath(path)
    for s in SETTINGS:
        raw = env.get(s.name)
        if raw is not None and (raw.strip() or s.kind == "words"):
            s.parse(raw, "environment")
    for k in sorted(env):
        if k.startswith("DCNET_") and k not in BY_NAME:
            close = difflib.get_close_matches(k, BY_NAME, 1)
            print(f"dcnet: warning: {k} is not a setting, ignored"
                  + (f" (did you mean {close[0]}?)" if close else ""), file=sys.stderr)
    return path


# ------------------------------------------------------------------- docs

def markdown():
    """docs/configuration.md's table of every setting (generated)"""
    L = []
    for group, title in GROUPS.items():
        rows = [s for s in SETTINGS if s.group == group]
        if not rows:
            continue
        L += [f"### {title}", "", "| variable | type | default | what |", "|---|---|---|---|"]
        for s in rows:
            kind = s.kind
            if s.kind == "choice":
                kind = " \\| ".join(s.choices)
            elif s.lo is not None or s.hi is not None:
                kind += ("" if s.lo is None else f" >= {s.lo:g}") if s.hi is None else \
                    f" {s.lo:g}..{s.hi:g}" if s.lo is not None else f" <= {s.hi:g}"
            d = s.default
            if s.name == "RESULTS":
                d = "results/"
            dflt = "-" if d is None else f"`{_text(d)}`" if _text(d) != "" else "empty"
            by = f" (read by {', '.join(f'`{p}`' for p in s.read_by)})" if s.read_by else ""
            L.append(f"| `{s.name}` | {kind} | {dflt} | {s.doc.replace('|', chr(92) + '|')}{by} |")
        L.append("")
    return "\n".join(L).rstrip("\n")


def main(argv=None, prog=None):
    import argparse
    ap = argparse.ArgumentParser(prog=prog, description="print every setting's value and where it comes from")
    ap.add_argument("--all", action="store_true", help="the unset ones too")
    a = ap.parse_args(argv)
    width = max(len(s.name) for s in SETTINGS)
    for s in SETTINGS:
        if not a.all and not is_set(s.name):
            continue
        src = ("file" if s.name in _FILE and os.environ.get(s.name) == _text(_FILE[s.name])
               else "environment" if is_set(s.name) else "default")
        v = get(s.name)
        print(f"{s.name:{width}s}  {'-' if v is None else v}  ({src})")
    if _FILE_PATH[0]:
        print(f"settings file: {_FILE_PATH[0]}")
    return 0
