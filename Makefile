# dcnet: a Linux 6.12 patchset for datacenter transport research.
#
#   make          install what is missing, build the release kernel, boot it,
#                 run the default demonstration, print where its report is
#   make check    the full test suite on the debug kernel (KASAN, lockdep)
#
# See README.md for every target.

SHELL := /bin/bash
ROOT := $(CURDIR)
# Kernel trees and objects: one place per machine, shared by clones.
BUILD ?= $(HOME)/.cache/dcnet/build
RESULTS ?= $(ROOT)/results
VENV := $(ROOT)/.venv
export BUILD RESULTS VENV
PY := $(VENV)/bin/python
# every target that runs Python runs the harness's one command,
# `python -m dcnet` (dcnet/cli.py; `$(DCNET) --help` lists its commands)
DCNET := $(PY) -m dcnet
# Benches, the demonstration and the testbed run in the guest's virtual
# time (QEMU icount) unless DCNET_CLOCK=real; REPEAT=2 boots each twice
# with the same seeds and reports how far every figure moved; SAMPLES=5
# boots each five times with different seeds and reports every figure's
# median and range.
REPEAT ?= 1
SAMPLES ?= 1
# make bench-presto's experiments, one target each (bench-presto-grid ...)
PRESTO_EXPS := grid rx cpu cpu-clos flowlet oversub trace failover steady-stride steady-bijection steady-random

.PHONY: all deps kernel kernel-debug kernel-release tools demo check check-host \
	check-guest bench-d2tcp bench-d2tcp-atscale bench-htb bench-fastlane bench-fastlane-clos bench-presto $(addprefix bench-presto-,$(PRESTO_EXPS)) bench-presto-flowlet-sweep iproute2 ovs qemu packages series series-bisect checkpatch docs-tables clean distclean help \
	testbed testbed-physical-selftest testbed-vmcluster

all: deps kernel-release tools demo testbed

help:
	@sed -n '/^## /s/^## //p' README.md 2>/dev/null || true
	@grep -E '^[a-z-]+:' Makefile | cut -d: -f1 | tr '\n' ' '; echo

deps:
	@scripts/deps.sh

kernel: kernel-release

kernel-debug: deps
	@scripts/kernel.sh build debug

kernel-release: deps
	@scripts/kernel.sh build release

tools: iproute2
	@$(MAKE) -s -C testbed/tools

# tc with iproute2-patches/ applied, in $(BUILD)/iproute2/tc/tc
iproute2:
	@scripts/iproute2.sh

# qemu-system-x86_64 (Debian's QEMU 7.2 source) with qemu-patches/ applied,
# in $(BUILD)/qemu/build: icount with a negative shift, for dilated time
# (DCNET_ICOUNT_SHIFT=-N; scripts/vmrun.py builds it on first use).
qemu: deps
	@scripts/qemu.sh

# Debian packages for real hosts (scripts/packages.sh, docs/deploy.md):
# the kernel (Debian's amd64 configuration with the patchset's options,
# bindeb-pkg), iproute2 and Open vSwitch from Debian's source packages with
# iproute2-patches/ and ovs-patches/ as quilt patches, dcnet-tools, and the
# apt repository $(BUILD)/packages/apt the playbook installs them from.
# DCNET_PKG_FLAVOR=release packages the VM kernel instead (minutes, not hours).
packages: deps
	@scripts/packages.sh all

# Open vSwitch 3.1 with ovs-patches/ applied, built in $(BUILD)/ovs and
# installed in $(BUILD)/ovs-install (scripts/ovs.sh).
ovs: deps
	@scripts/ovs.sh build

# The default demonstration: D2TCP against DCTCP on the paper's deadline
# microbenchmark (Fig. 6) and its fan-in at 40 leaves (Fig. 7), the
# paper's testbed slowed down to 200 Mbit/s, on the release kernel
# (docs/d2tcp.md; about 45 min of wall time on a 2-core host).
demo: tools
	@$(DCNET) demo --kernel $(BUILD)/obj-release --out $(RESULTS)/demo --repeat $(REPEAT) --samples $(SAMPLES)

check: deps kernel-debug tools ovs
	@$(DCNET) check

# The host-side part of `make check` only (no kernel build, no VM).
check-host: deps tools ovs
	@$(DCNET) check --host-only

bench-d2tcp: deps kernel-release tools
	@$(DCNET) bench d2tcp --kernel $(BUILD)/obj-release --out $(RESULTS)/bench-d2tcp --repeat $(REPEAT) --samples $(SAMPLES)
	@echo "report: $(RESULTS)/bench-d2tcp/report.md"

# D2TCP's at-scale benchmark (Sec. 4.2, Figs. 9-14) on the testbed's Clos:
# five OLDI applications, fan-in 10, 20 and 40, TCP, DCTCP and D2TCP, at 25 Mbit/s
# with every time x 40 (testbed/experiments/d2tcp-atscale.json, docs/d2tcp.md).
bench-d2tcp-atscale: deps kernel-release tools
	@$(DCNET) bench d2tcp-atscale --kernel $(BUILD)/obj-release --out $(RESULTS)/bench-d2tcp-atscale --repeat $(REPEAT) --samples $(SAMPLES)
	@echo "report: $(RESULTS)/bench-d2tcp-atscale/report.md"

bench-fastlane: deps kernel-release tools
	@$(DCNET) bench fastlane --kernel $(BUILD)/obj-release --out $(RESULTS)/bench-fastlane --repeat $(REPEAT) --samples $(SAMPLES)
	@echo "report: $(RESULTS)/bench-fastlane/report.md"
	@$(MAKE) --no-print-directory bench-fastlane-clos

# FastLane over multiple paths: TCP-Codel, FL-FH, FL-PS, DCTCP on the Clos:
# the paper's Fig. 4 (utilization), Fig. 5 (a degraded spine link), Fig. 6 (short share)
bench-fastlane-clos: deps kernel-release tools
	@$(DCNET) bench fastlane-clos --kernel $(BUILD)/obj-release --out $(RESULTS)/bench-fastlane --repeat $(REPEAT) --samples $(SAMPLES)

bench-htb: deps kernel-release tools
	@$(DCNET) bench htb --kernel $(BUILD)/obj-release --out $(RESULTS)/bench-htb --repeat $(REPEAT) --samples $(SAMPLES)
	@echo "report: $(RESULTS)/bench-htb/report.md"

# Presto (docs/presto.md): Optimal, ECMP, MPTCP, ECMP over the spanning
# trees and Presto's flowcells on the testbed's Clos, every workload of
# Fig. 15 and mice beside elephants (testbed/experiments/presto.json);
# the receiver (Fig. 5), the CPU cost (Fig. 6), flowlets (Fig. 13), the
# oversubscription benchmark (Figs. 10-12), the trace-driven mice
# (Table 1) and failover (Figs. 17-18).
# Presto's experiments are targets of their own, so that `make -j3
# bench-presto` boots them side by side (each in its own guest and results
# directory; virtual time keeps their figures what a serial run gives).
bench-presto: $(addprefix bench-presto-,$(PRESTO_EXPS))
	@echo "report: $(RESULTS)/bench-presto/report.md (Fig. 15/16), $(RESULTS)/bench-presto-rx/report.md (Fig. 5), $(RESULTS)/bench-presto-cpu/report.md (Fig. 6), $(RESULTS)/bench-presto-cpu-clos/report.md (Fig. 6 under reordering), $(RESULTS)/bench-presto-flowlet/report.md (Fig. 13), $(RESULTS)/bench-presto-oversub/report.md (Figs. 10-12), $(RESULTS)/bench-presto-trace/report.md (Table 1), $(RESULTS)/bench-presto-failover/report.md (Figs. 17-18), $(RESULTS)/bench-presto-steady-{stride,bijection,random}/report.md (steady state, 1 MB ports)"

# the grid (Figs. 15-16) is presto.json and writes results/bench-presto
bench-presto-grid: deps kernel-release tools ovs
	@$(DCNET) bench presto-grid --kernel $(BUILD)/obj-release --out $(RESULTS)/bench-presto --repeat $(REPEAT) --samples $(SAMPLES)

$(addprefix bench-presto-,$(filter-out grid,$(PRESTO_EXPS))): bench-presto-%: deps kernel-release tools ovs
	@$(DCNET) bench presto-$* --kernel $(BUILD)/obj-release --out $(RESULTS)/bench-presto-$* --repeat $(REPEAT) --samples $(SAMPLES)

# Flowlet switching with gaps of 2-50 ms (this rig's regime, Fig. 13)
# beside Optimal, Presto and l2ecmp on stride: 31 min of wall time
# (1859 s) on a loaded 2-core host, so not part of bench-presto (docs/presto.md).
bench-presto-flowlet-sweep: deps kernel-release tools ovs
	@$(DCNET) bench presto-flowlet-sweep --kernel $(BUILD)/obj-release --out $(RESULTS)/bench-presto-flowlet-sweep --repeat $(REPEAT) --samples $(SAMPLES)

# checkpatch.pl on the series as `make series` exports it (a new file's
# MAINTAINERS reminder left out)
# Rewrite every results table in README.md and docs/ from docs/results/
# (dcnet/doctables; tests/host/test_docs.py fails when they differ).
docs-tables:
	@$(DCNET) docs-tables

checkpatch:
	@d=$$(mktemp -d) && scripts/series.sh "$$d" >/dev/null && \
	$(BUILD)/linux/scripts/checkpatch.pl --no-tree -q --ignore FILE_PATH_CHANGES "$$d"/*.patch; \
	rc=$$?; rm -rf "$$d"; exit $$rc

# Every patch of the series builds: scripts/series-bisect.sh (needs the
# release build for its configuration and symbols)
series-bisect: kernel-release
	@scripts/series-bisect.sh

# The testbed's default suite (testbed/experiments/default.json): Optimal,
# ECMP and MPTCP on stride and random bijection, 16 hosts on a 2-tier Clos
# in the release guest.  EXPERIMENT=path runs another definition.
EXPERIMENT ?= testbed/experiments/default.json
testbed: deps kernel-release tools
	@$(DCNET) testbed --kernel $(BUILD)/obj-release --experiment $(EXPERIMENT) --out $(RESULTS)/testbed --repeat $(REPEAT) --samples $(SAMPLES)
	@echo "report: $(RESULTS)/testbed/report.md"

# testbed/physical (Ansible) for real: sshd in network namespaces inside the
# release guest, site.yml --skip-tags kernel,ovs, raw.json checked.
PHYS_TIMEOUT ?= 1500
# The playbook's whole path on Debian 12 virtual machines
# (testbed/physical/vmcluster.sh, docs/deploy.md): the packages with the
# vm kernel (Debian's linux-image-cloud-amd64 configuration reduced to the
# modules the machines load, plus the patchset's options), two
# debootstrapped machines under QEMU, site.yml with
# every role: apt installs the packages, the machines reboot into the dcnet
# kernel, OVS bridges their data NIC, a workload runs, the report comes back.
testbed-vmcluster: deps
	@DCNET_PKG_FLAVOR=vm scripts/packages.sh all
	@testbed/physical/vmcluster.sh all

testbed-physical-selftest: deps tools
	@rc=0; $(DCNET) vmrun --kernel $(BUILD)/obj-release \
		--out $(RESULTS)/testbed-physical-selftest --timeout $(PHYS_TIMEOUT) \
		-- sh testbed/physical/selftest.sh || rc=$$?; \
	tail -n 1 $(RESULTS)/testbed-physical-selftest/guest.log 2>/dev/null; exit $$rc

# The whole change as a git format-patch series against the pristine tree.
series: deps
	@scripts/series.sh $(ROOT)/dist

clean:
	rm -rf $(RESULTS) dist
	@$(MAKE) -s -C testbed/tools clean

distclean: clean
	rm -rf $(BUILD)/obj-debug $(BUILD)/obj-release $(BUILD)/linux $(VENV) \
		$(BUILD)/ovs $(BUILD)/ovs-src $(BUILD)/ovs-install
