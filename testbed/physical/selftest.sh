#!/bin/sh
# The physical-testbed playbook, for real, against N "hosts" that are
# network namespaces running their own sshd:
#
#   sh testbed/physical/selftest.sh          # as root, here or in the guest
#
# Namespaces dcp1..dcpN hang off a Linux bridge dcpbr0 in the current
# namespace (10.77.0.0/24, this side 10.77.0.254; management and data plane
# share the veth, eth0 in each namespace).  Each runs `sshd -D` with a
# generated config, host key and authorized key (root, key only).  Then
#   ansible-playbook site.yml --skip-tags repo,kernel,ovs
# runs a stride workload (DCNET_PHYS_DURATION s flows) over ssh: sysctls,
# HTB (1 Gbit/s) on eth0, iperf3 servers and clients, gather, collect.py.  raw.json
# must hold one record per flow, each with throughput, HTB counters on
# every port and the sysctls as set.  Everything is removed on exit.
#
# With DCNET_PHYS_MICE=N (2; 0: none) N 50 KB mice per host run alongside
# (workloads.py --with mice): sized flows, through dltraffic sched and
# server; each must report its FCT.
# Environment: DCNET_PHYS_HOSTS (3), DCNET_PHYS_DURATION (3),
# DCNET_OUT (results go to $DCNET_OUT/physical-selftest/, else
# /tmp/dcnet-physical-selftest/), DCNET_TC (tc binary, default tc),
# DCNET_PHYS_MODE=tcp|mptcp (mptcp: every iperf3 under mptcpize, a second
# address per namespace as subflow endpoint, MPTCP MIB counters checked;
# needs a kernel with MPTCP and mptcpize), DCNET_PHYS_KERNEL_CHECK=1 (first run the kernel role in --check mode with
# a stand-in package named after the running kernel: its tasks over ssh,
# without installing or rebooting), DCNET_PHYS_PLOTS=0/1 (report.py's
# plots; default off in the virtme-ng guest, where they take minutes),
# DCNET_PHYS_PRESTO_GRO=0/1 (the presto role: Presto GRO on each
# namespace's eth0 with dcnet/prestogro.py, its counters in raw.json;
# default on when the kernel has the presto-gro netlink family).
# Works on a normal root filesystem and in the project's virtme-ng guest
# (read-only root; writable /etc, /var, /tmp, /run): everything written goes
# to a temporary directory under /tmp and to the results directory.
set -eu

N=${DCNET_PHYS_HOSTS:-3}
DURATION=${DCNET_PHYS_DURATION:-3}
MODE=${DCNET_PHYS_MODE:-tcp}
MICE=${DCNET_PHYS_MICE:-2}
PRESTO_GRO=${DCNET_PHYS_PRESTO_GRO:-}
case $MODE in tcp|mptcp) ;; *) echo "selftest: DCNET_PHYS_MODE is tcp or mptcp" >&2; exit 2 ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
VENV=$ROOT/.venv
if [ -n "${DCNET_OUT:-}" ]; then OUT=$DCNET_OUT/physical-selftest; else OUT=/tmp/dcnet-physical-selftest; fi
BR=dcpbr0
NET=10.77.0
T0=$(date +%s)

say() { echo "selftest: $*"; }
die() { say "FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (namespaces, sshd)"
[ -x /usr/sbin/sshd ] || die "no /usr/sbin/sshd (apt-get install openssh-server, or make deps)"
[ -x "$VENV/bin/ansible-playbook" ] || die "no $VENV/bin/ansible-playbook (make deps)"
command -v iperf3 >/dev/null || die "no iperf3"
[ "$MICE" = 0 ] || [ -x "$ROOT/testbed/tools/dltraffic" ] || die "no testbed/tools/dltraffic (make tools)"
if [ "$MODE" = mptcp ]; then
	command -v mptcpize >/dev/null || die "no mptcpize (apt-get install mptcpize)"
	[ -e /proc/sys/net/mptcp/enabled ] || die "this kernel has no MPTCP"
fi
for i in $(seq 1 "$N"); do
	! ip netns list | grep -qw "dcp$i" || die "namespace dcp$i exists (left by an earlier run? ip netns del dcp$i)"
	! ip link show "dcpv$i" >/dev/null 2>&1 || die "link dcpv$i exists (left by an earlier run? ip link del dcpv$i)"
done
! ip link show "$BR" >/dev/null 2>&1 || die "$BR exists (left by an earlier run? ip link del $BR)"
[ -z "$(ip -4 route show $NET.0/24)" ] || die "$NET.0/24 is already routed here"

if [ -z "$PRESTO_GRO" ]; then
	if "$VENV/bin/python" "$ROOT/dcnet/prestogro.py" show >/dev/null 2>&1; then PRESTO_GRO=1; else PRESTO_GRO=0; fi
fi
case $PRESTO_GRO in 0|1) ;; *) die "DCNET_PHYS_PRESTO_GRO is 0 or 1" ;; esac

T=$(mktemp -d /tmp/dcnet-physical.XXXXXX)
SSHD_PIDS=
NS_MADE=
BR_MADE=

cleanup() {
	rc=$?
	set +e
	trap - EXIT INT TERM
	# ansible's ssh control masters (by their sockets, not by name)
	for s in "$T"/cp/*; do
		[ -S "$s" ] && ssh -F /dev/null -o ControlPath="$s" -O exit dummy >/dev/null 2>&1
	done
	for pid in $SSHD_PIDS; do kill "$pid" 2>/dev/null; done
	for ns in $NS_MADE; do
		# whatever still runs in our namespaces (sshd sessions, iperf3)
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null; done
	done
	[ -z "$NS_MADE" ] || sleep 0.5
	for ns in $NS_MADE; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
		# the veth first: a namespace is torn down asynchronously, and with
		# it its veth pairs, which would race with the next run
		ip link del "dcpv${ns#dcp}" 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	[ -z "$BR_MADE" ] || ip link del "$BR" 2>/dev/null
	if [ "$rc" != 0 ] && [ -d "$T" ]; then
		for f in "$T"/sshd-*.log; do
			[ -s "$f" ] && { say "--- $f"; tail -n 20 "$f"; }
		done
	fi
	rm -rf "$T"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the hosts: namespaces on a bridge -------------------------------------
say "$N namespaces on $BR, sshd in each (temp $T)"
ip link add "$BR" type bridge
BR_MADE=1
ip addr add "$NET.254/24" dev "$BR"
ip link set "$BR" up
for i in $(seq 1 "$N"); do
	ns=dcp$i
	ip netns add "$ns"
	NS_MADE="$NS_MADE $ns"
	ip link add "dcpv$i" type veth peer name eth0 netns "$ns"
	ip link set "dcpv$i" master "$BR" up
	ip -n "$ns" link set lo up
	ip -n "$ns" link set eth0 up
	ip -n "$ns" addr add "$NET.$i/24" dev eth0
	ip -n "$ns" addr add "fd77::$i/64" dev eth0 nodad
	# mptcp mode: a second address, announced as an MPTCP subflow endpoint
	[ "$MODE" = tcp ] || ip -n "$ns" addr add "10.78.0.$i/24" dev eth0
done

# --- sshd in each namespace --------------------------------------------------
# privilege separation directory (Debian's sshd wants it; /run is writable
# in the guest too)
[ -d /run/sshd ] || mkdir -m 0755 /run/sshd
ssh-keygen -q -t ed25519 -N '' -C dcnet-selftest-host -f "$T/ssh_host_ed25519_key"
ssh-keygen -q -t ed25519 -N '' -C dcnet-selftest -f "$T/id_ed25519"
cp "$T/id_ed25519.pub" "$T/authorized_keys"
cat >"$T/sshd_config" <<EOF
# generated by testbed/physical/selftest.sh
ListenAddress 0.0.0.0
HostKey $T/ssh_host_ed25519_key
AuthorizedKeysFile $T/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
PrintMotd no
PrintLastLog no
MaxStartups 64:30:128
MaxSessions 64
LogLevel INFO
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
# Without PAM, sshd refuses an account whose password is locked ("!"), even
# for keys: so it is for root in the virtme-ng guest ("root:!:...").  Then
# sshd gets a copy of /etc/shadow with root's password field "*" (no
# password, not locked), bind-mounted over /etc/shadow inside the mount
# namespace `ip netns exec` makes for it; /etc/shadow itself is not changed.
SHADOW=
if grep -q '^root:!' /etc/shadow; then
	(umask 077 && sed 's/^root:![^:]*:/root:*:/' /etc/shadow >"$T/shadow")
	SHADOW=$T/shadow
	say "root's password is locked here: sshd sees a copy of /etc/shadow that unlocks it"
fi
for i in $(seq 1 "$N"); do
	ip netns exec "dcp$i" sh -c '
		if [ -n "$1" ]; then mount --bind "$1" /etc/shadow || exit 1; fi
		shift
		exec /usr/sbin/sshd "$@"' sh "$SHADOW" \
		-D -f "$T/sshd_config" -o PidFile="$T/sshd-dcp$i.pid" -E "$T/sshd-dcp$i.log" &
	SSHD_PIDS="$SSHD_PIDS $!"
done
# The logins below leave ssh control masters at the path ansible uses
# (ANSIBLE_SSH_CONTROL_PATH below), so its first task skips the handshake.
mkdir -p "$T/cp"
SSH="ssh -F /dev/null -i $T/id_ed25519 -o IdentitiesOnly=yes -o BatchMode=yes -o ConnectTimeout=20
     -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no -o LogLevel=ERROR
     -o ControlMaster=auto -o ControlPersist=600 -o ControlPath=$T/cp/%h-%p-%r"
# one login per host, in parallel (process starts are slow in the guest);
# the command checks that it runs in the right namespace
deadline=$(( $(date +%s) + 180 ))
login_pids=
for i in $(seq 1 "$N"); do
	(
		until $SSH "root@$NET.$i" "test \"\$(ip -4 -o addr show dev eth0 | grep -c $NET.$i/)\" = 1" \
			2>"$T/ssh-login-$i.err"; do
			[ "$(date +%s)" -lt "$deadline" ] || {
				say "no ssh login into dcp$i ($NET.$i)"; cat "$T/ssh-login-$i.err"; exit 1; }
			if grep -q "not allowed" "$T/sshd-dcp$i.log" 2>/dev/null; then
				say "sshd in dcp$i refuses root"; exit 1
			fi
			sleep 1
		done
	) &
	login_pids="$login_pids $!"
done
for pid in $login_pids; do wait "$pid" || die "ssh logins failed"; done
say "ssh into all $N namespaces works ($(( $(date +%s) - T0 )) s)"

# --- inventory and variables ---------------------------------------------------
{
	echo "all:"
	echo "  children:"
	echo "    dcnet:"
	echo "      vars:"
	echo "        ansible_user: root"
	echo "        ansible_python_interpreter: /usr/bin/python3"
	echo "        ansible_ssh_private_key_file: $T/id_ed25519"
	echo "        ansible_ssh_common_args: -F /dev/null -o IdentitiesOnly=yes -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no -o LogLevel=ERROR"
	echo "        dcnet_dev: eth0"
	echo "      hosts:"
	for i in $(seq 1 "$N"); do
		if [ "$MODE" = mptcp ]; then
			echo "        h$i: {ansible_host: $NET.$i, dcnet_ip: $NET.$i, dcnet_ip6: \"fd77::$i\"," \
				"dcnet_mptcp_endpoints: [\"10.78.0.$i subflow\"]}"
		else
			echo "        h$i: {ansible_host: $NET.$i, dcnet_ip: $NET.$i, dcnet_ip6: \"fd77::$i\"}"
		fi
	done
} >"$T/inventory.yml"

WORKLOADS=$ROOT/testbed/workloads.py

TC=${DCNET_TC:-tc}
# report.py's PNG plots take minutes under TCG: off in the virtme-ng guest
# unless DCNET_PHYS_PLOTS=1 (report.md and results.json are written anyway)
if [ -z "${DCNET_PHYS_PLOTS:-}" ]; then
	if grep -q virtme /proc/cmdline 2>/dev/null; then DCNET_PHYS_PLOTS=0; else DCNET_PHYS_PLOTS=1; fi
fi
REPORT_ARGS=
[ "$DCNET_PHYS_PLOTS" = 1 ] || REPORT_ARGS=--no-plots
cat >"$T/vars.yml" <<EOF
dcnet_results: $OUT
dcnet_run: selftest
dcnet_remote_dir: $T/remote
dcnet_workloads_py: $WORKLOADS
dcnet_workload: stride
dcnet_stride: 1
dcnet_workload_args: "$( [ "$MICE" -gt 0 ] && echo "--with mice --count $MICE" )"
dcnet_seed: 1
dcnet_duration: $DURATION
dcnet_mode: $MODE
dcnet_tc: $TC
dcnet_sysctl:
  net.ipv4.tcp_congestion_control: reno
  net.ipv4.tcp_ecn: 1
dcnet_qdisc:
  - "qdisc add dev {{ dcnet_dev }} root handle 1: htb default 10"
  - "class add dev {{ dcnet_dev }} parent 1: classid 1:10 htb rate 1gbit"
dcnet_ovs: false
dcnet_presto_gro: $( [ "$PRESTO_GRO" = 1 ] && echo true || echo false )
dcnet_presto_gro_cmd: $VENV/bin/python $ROOT/dcnet/prestogro.py
dcnet_presto_gro_settings: {timeout_max_us: 2000}
dcnet_async_margin: 300
dcnet_poll: 3
dcnet_report_args: "$REPORT_ARGS"
EOF
rm -rf "$OUT/selftest" "$OUT/selftest-ansible.log"
mkdir -p "$OUT" "$T/cp" "$T/ansible-home" "$T/ansible-local" "$T/ansible-remote" "$T/ansible-async"

# --- the playbook ------------------------------------------------------------------
# everything ansible writes goes under $T (the guest's /root is read-only)
FORKS=$N
[ "$FORKS" -le 4 ] || FORKS=4
export ANSIBLE_CONFIG="$HERE/ansible.cfg" ANSIBLE_HOME="$T/ansible-home" \
	ANSIBLE_LOCAL_TEMP="$T/ansible-local" ANSIBLE_REMOTE_TEMP="$T/ansible-remote" \
	ANSIBLE_ASYNC_DIR="$T/ansible-async" ANSIBLE_SSH_CONTROL_PATH_DIR="$T/cp" \
	ANSIBLE_SSH_CONTROL_PATH="$T/cp/%%h-%%p-%%r" \
	ANSIBLE_HOST_KEY_CHECKING=False ANSIBLE_FORKS="$FORKS" ANSIBLE_TIMEOUT=120 \
	ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=False ANSIBLE_LOG_PATH="$OUT/selftest-ansible.log" \
	LANG=C.UTF-8 LC_ALL=C.UTF-8 PYTHONDONTWRITEBYTECODE=1
# report.py's matplotlib: in the guest ~/.cache is read-only and matplotlib
# would rebuild its font cache (minutes under TCG) in a fresh temporary
# directory; give it a writable copy of the existing one
mkdir -p "$T/mpl"
cp "${XDG_CACHE_HOME:-$HOME/.cache}"/matplotlib/fontlist-*.json "$T/mpl/" 2>/dev/null || true
export MPLCONFIGDIR="$T/mpl"

if [ "${DCNET_PHYS_KERNEL_CHECK:-0}" = 1 ]; then
	# the kernel role in check mode (nothing installed, no reboot) with a
	# stand-in package named after the running kernel
	mkdir -p "$T/debs"
	: >"$T/debs/linux-image-$(uname -r)_1_amd64.deb"
	say "ansible-playbook site.yml --tags kernel --check (stand-in linux-image-$(uname -r))"
	"$VENV/bin/ansible-playbook" -i "$T/inventory.yml" "$HERE/site.yml" --tags kernel --check \
		-e dcnet_kernel_source=deb -e "dcnet_deb_dir=$T/debs" -e "dcnet_kernel_match=$(uname -r)" -e "dcnet_results=$T/kcheck" ||
		die "kernel role (check mode) failed"
fi
say "ansible-playbook site.yml --skip-tags repo,kernel,ovs ($N hosts, $MODE, stride, $DURATION s flows, forks $FORKS)"
T1=$(date +%s)
rc=0
"$VENV/bin/ansible-playbook" -i "$T/inventory.yml" "$HERE/site.yml" \
	--skip-tags repo,kernel,ovs -e "@$T/vars.yml" || rc=$?
T2=$(date +%s)
say "ansible-playbook exit $rc ($((T2 - T1)) s; log with times: $OUT/selftest-ansible.log;" \
	"$(cat "$T"/sshd-*.log | grep -c 'Accepted publickey') ssh logins for $N hosts)"

# --- the verdict ----------------------------------------------------------------------
RAW=$OUT/selftest/raw.json
[ -s "$RAW" ] || die "no $RAW (ansible-playbook exit $rc)"
# mptcp mode: each namespace's MIB counts the MPTCP connections it accepted
# and the subflows that joined them
MPTCP_MIB=
if [ "$MODE" = mptcp ]; then
	for i in $(seq 1 "$N"); do
		MPTCP_MIB="$MPTCP_MIB h$i=$(ip netns exec "dcp$i" nstat -az MPTcpExtMPCapableSYNRX MPTcpExtMPJoinSynRx |
			awk '/^MPTcp/ {printf "%s%s", sep, $2; sep=","}'),$(ip -n "dcp$i" rule show pref 100 |
			grep -c "from 10.78.0.$i ipproto tcp dport 20000-65534 unreachable")"
	done
fi
"$VENV/bin/python" - "$OUT/selftest" "$N" "$rc" "$((T2 - T0))" "$ROOT" "$MODE" "$MPTCP_MIB" "$PRESTO_GRO" <<'EOF' || exit 1
import json, os, sys
run_dir, n, rc, secs, root = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
mode, mib = sys.argv[6], dict(x.split("=") for x in sys.argv[7].split())
presto_gro = sys.argv[8] == "1"
raw = json.load(open(os.path.join(run_dir, "raw.json")))
want = json.load(open(os.path.join(run_dir, "flows.json")))
bad = []
if rc:
    bad.append(f"ansible-playbook exit {rc}")
meta, runs = raw["meta"], raw["runs"]
if meta.get("platform") != "physical" or len(runs) != 1:
    bad.append("meta/runs malformed")
run = runs[0]
flows = run["flows"]
if sorted(f["id"] for f in flows) != sorted(f["id"] for f in want) or len(flows) != len(want):
    bad.append(f"{len(flows)} flow records for {len(want)} flows")
sized = {f["id"]: f for f in want if f.get("bytes")}
for f in flows:
    if f["id"] in sized:
        # a mouse: dltraffic's FCT for exactly its bytes
        if not (f["bytes"] == sized[f["id"]]["bytes"] and (f["fct_us"] or 0) > 0):
            bad.append(f"sized flow {f['id']} {f['src']}->{f['dst']}: {f['bytes']} bytes,"
                       f" fct {f['fct_us']} ({f.get('error', '')})")
        continue
    if not (f["bytes"] > 0 and f["tput_bps"] > 0 and f["intervals_bps"]):
        bad.append(f"flow {f['id']} {f['src']}->{f['dst']}: no throughput ({f.get('error', '')})")
    # the sysctl reached the sockets: iperf3 names the sender's congestion control
    j = json.load(open(os.path.join(run_dir, f["src"], f"flow-{f['id']}-{f['src']}-{f['dst']}.json")))
    if j.get("end", {}).get("sender_tcp_congestion") != "reno":
        bad.append(f"flow {f['id']}: sender_tcp_congestion {j.get('end', {}).get('sender_tcp_congestion')}")
hosts = [f"h{i}" for i in range(1, n + 1)]
if meta.get("hosts") != hosts:
    bad.append(f"hosts {meta.get('hosts')}")
ports = {p["node"]: p for p in run["ports"]}
for h in hosts:
    p = ports.get(h)
    if not p or p["kind"] != "htb" or p["sent_bytes"] <= 0:
        bad.append(f"{h}: port {p}")
    if not isinstance(run["cpu"].get(h), float):
        bad.append(f"{h}: cpu {run['cpu'].get(h)}")
    sc = meta["host_info"].get(h, {}).get("sysctl", {})
    if sc.get("net.ipv4.tcp_ecn") != "1" or sc.get("net.ipv4.tcp_congestion_control") != "reno":
        bad.append(f"{h}: sysctl {sc}")
    if mode == "mptcp":
        if sc.get("net.mptcp.enabled") != "1":
            bad.append(f"{h}: net.mptcp.enabled {sc.get('net.mptcp.enabled')}")
        capable, joins, rule = (int(x) for x in mib.get(h, "0,0,0").split(","))
        if capable < 1:
            bad.append(f"{h}: accepted no MPTCP connection (MPCapableSYNRX {capable})")
        if rule != 1:
            bad.append(f"{h}: {rule} rules making its endpoint's server-side joins unreachable, not 1")
# the presto role: Presto GRO on with the asked-for setting, and the data
# went through it (no OVS here, so every data segment is "untagged")
pg_segs = {}
for h in hosts:
    pg = meta["host_info"].get(h, {}).get("presto_gro")
    if not presto_gro:
        if pg:
            bad.append(f"{h}: presto_gro {pg} with the presto role off")
        continue
    st, c = (pg or {}).get("settings") or {}, (pg or {}).get("counters") or {}
    if st.get("enabled") != 1 or st.get("timeout_max_us") != 2000:
        bad.append(f"{h}: Presto GRO settings {st}")
    pg_segs[h] = c.get("untagged", 0) + c.get("pushed_inorder", 0)
    if pg_segs[h] <= 0:
        bad.append(f"{h}: no segment through Presto GRO ({c})")
if meta.get("kernel") != os.uname().release:
    bad.append(f"kernel {meta.get('kernel')} != {os.uname().release}")
tputs = [f["tput_bps"] / 1e6 for f in flows if f["id"] not in sized] or [0]
fcts = sorted(f["fct_us"] / 1e3 for f in flows if f["id"] in sized and f["fct_us"])
report = os.path.isdir(os.path.join(run_dir, "report"))
has_report_py = os.path.exists(os.path.join(root, "testbed", "report.py"))
note = ("report written" if report else
        "no report (testbed/report.py missing)" if not has_report_py else "report MISSING")
if has_report_py and not report:
    bad.append("testbed/report.py exists but no report/")
if bad:
    print("selftest: FAIL: " + "; ".join(bad[:8]))
    sys.exit(1)
print(f"selftest: PASS: {n} hosts over ssh, {mode}, {len(flows)} flows, "
      f"{min(tputs):.0f}-{max(tputs):.0f} Mbit/s per elephant, "
      + (f"{len(fcts)} mice, FCT {fcts[0]:.1f}-{fcts[-1]:.1f} ms, " if fcts else "")
      + f"htb on {len(ports)} ports, "
      + (f"Presto GRO segments {' '.join(f'{h}={v}' for h, v in pg_segs.items())}, " if presto_gro else "")
      f"kernel {meta['kernel']}, {note}, "
      + (f"MPTCP accepted,joined,rule {' '.join(f'{h}={v}' for h, v in mib.items())}, " if mode == "mptcp" else "")
      + f"{secs} s; raw.json: {os.path.join(run_dir, 'raw.json')}")
EOF
