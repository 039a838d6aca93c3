#!/bin/sh
# CloudLab startup script of the dcnet profile (profile.py), run as root at
# every boot of every node:
#
#   boot.sh NAME SPINES LEAVES HOSTS_PER_LEAF [--playbook 'ANSIBLE-PLAYBOOK ARGS']
#
# Every node configures itself: root ssh with the experiment's key, then
#   host hK   packages the playbook needs, altname dcnet0 on its data-plane
#             NIC, routes to the other leaves' hosts via its leaf
#   leaf lL   IPv4 forwarding, ECMP routes to the other leaves over all spines
#   spine sS  IPv4 forwarding, a route to each leaf's hosts
# and writes /var/lib/dcnet-cloudlab/ready.  With --playbook (h1) it then
# waits for every node to be ready, writes the inventory (profile.py
# --inventory) and runs testbed/physical/site.yml once with those arguments.
# Addresses: profile.py (the emulated fabric's plan).
set -u
NAME=$1 SPINES=$2 LEAVES=$3 HPL=$4
shift 4
PLAYBOOK=""
if [ "${1:-}" = "--playbook" ]; then
	PLAYBOOK_ARGS=${2:-}
	PLAYBOOK=yes
fi
exec >> /var/log/dcnet-cloudlab.log 2>&1
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
STATE=/var/lib/dcnet-cloudlab
mkdir -p "$STATE"
log() { echo "dcnet-cloudlab: $(date -u +%FT%TZ) $NAME: $*"; }
log "boot: spines $SPINES leaves $LEAVES hosts/leaf $HPL"
rm -f "$STATE/ready"

# --- root ssh with the experiment's key (the playbook logs in as root) ----------
mkdir -p /root/.ssh && chmod 700 /root/.ssh
if [ ! -s /root/.ssh/id_dcnet ]; then
	geni-get key > /root/.ssh/id_dcnet.tmp && mv /root/.ssh/id_dcnet.tmp /root/.ssh/id_dcnet
	chmod 600 /root/.ssh/id_dcnet
fi
pub=$(ssh-keygen -y -f /root/.ssh/id_dcnet) || { log "FAIL: no experiment key (geni-get key)"; exit 1; }
touch /root/.ssh/authorized_keys
grep -qF "$pub" /root/.ssh/authorized_keys || echo "$pub dcnet-cloudlab" >> /root/.ssh/authorized_keys

# dev_of IP: the interface that holds IP (CloudLab configures the RSpec's
# addresses before the startup script runs; wait a little all the same)
dev_of() {
	i=0
	while [ $i -lt 60 ]; do
		d=$(ip -o -4 addr show | awk -v a="$1" '{split($4, p, "/"); if (p[1] == a) print $2}' | head -n1)
		[ -n "$d" ] && { echo "$d"; return 0; }
		i=$((i + 1)); sleep 2
	done
	return 1
}

n=${NAME#?}
case $NAME in
h*)
	l=$(( (n - 1) / HPL + 1 )) k=$(( (n - 1) % HPL + 1 ))
	ip=10.$l.$k.1
	dev=$(dev_of "$ip") || { log "FAIL: no interface has $ip"; exit 1; }
	ip link property add dev "$dev" altname dcnet0 2>/dev/null || true
	o=1
	while [ $o -le "$LEAVES" ]; do
		[ $o -ne $l ] && ip route replace 10.$o.0.0/16 via 10.$l.$k.254 dev "$dev"
		o=$((o + 1))
	done
	log "host: $ip on $dev (altname dcnet0), leaf l$l"
	pkgs="python3 iperf3 sockperf mptcpize"
	[ -n "$PLAYBOOK" ] && pkgs="$pkgs python3-venv openssh-client"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq && apt-get install -y -qq --no-install-recommends $pkgs \
		|| { log "FAIL: apt-get install $pkgs"; exit 1; }
	;;
l*)
	sysctl -qw net.ipv4.ip_forward=1 net.ipv4.fib_multipath_hash_policy=1
	o=1
	while [ $o -le "$LEAVES" ]; do
		if [ $o -ne $n ]; then
			nh="" s=1
			while [ $s -le "$SPINES" ]; do
				a=10.$((100 + n)).$s.2
				dev_of 10.$((100 + n)).$s.1 > /dev/null && nh="$nh nexthop via $a"
				s=$((s + 1))
			done
			ip route replace 10.$o.0.0/16 $nh
		fi
		o=$((o + 1))
	done
	log "leaf: ECMP over $SPINES spines to $((LEAVES - 1)) other leaves"
	;;
s*)
	sysctl -qw net.ipv4.ip_forward=1
	l=1
	while [ $l -le "$LEAVES" ]; do
		dev_of 10.$((100 + l)).$n.2 > /dev/null && ip route replace 10.$l.0.0/16 via 10.$((100 + l)).$n.1
		l=$((l + 1))
	done
	log "spine: routes to $LEAVES leaves"
	;;
esac
touch "$STATE/ready"
log "ready"

[ -n "$PLAYBOOK" ] || exit 0
if [ -e "$STATE/playbook.done" ]; then
	log "playbook: already run ($STATE/playbook.done); remove it to run again at boot"
	exit 0
fi

# --- controller: wait for every node, then run the playbook once ------------------
domain=$(hostname -f | cut -d. -f2-)
inv=$STATE/inventory.yml
python3 "$HERE/profile.py" --inventory --spines "$SPINES" --leaves "$LEAVES" \
	--hostsPerLeaf "$HPL" --domain "$domain" > "$inv" || { log "FAIL: inventory"; exit 1; }
nodes=$(awk '/^ *ansible_host:/ {print $2}' "$inv")
ssh_opts="-i /root/.ssh/id_dcnet -o BatchMode=yes -o ConnectTimeout=5 -o StrictHostKeyChecking=accept-new"
deadline=$(( $(date +%s) + 3600 ))
for h in $nodes; do
	until ssh $ssh_opts "root@$h" test -e "$STATE/ready" 2>/dev/null; do
		[ "$(date +%s)" -lt $deadline ] || { log "FAIL: $h not ready within an hour"; exit 1; }
		sleep 10
	done
done
log "controller: all nodes ready"
venv=$STATE/venv
if [ ! -x "$venv/bin/ansible-playbook" ]; then
	python3 -m venv "$venv" && "$venv/bin/pip" install -q "ansible-core>=2.15,<2.18" \
		|| { log "FAIL: ansible-core"; exit 1; }
fi
log "playbook: ansible-playbook -i $inv site.yml $PLAYBOOK_ARGS"
cd "$REPO/testbed/physical" || exit 1
# shellcheck disable=SC2086  # the arguments are a word list
ANSIBLE_CONFIG=ansible.cfg "$venv/bin/ansible-playbook" -i "$inv" site.yml $PLAYBOOK_ARGS \
	> /var/log/dcnet-cloudlab-playbook.log 2>&1
rc=$?
echo "$rc" > "$STATE/playbook.done"
log "playbook: exit $rc (/var/log/dcnet-cloudlab-playbook.log)"
exit $rc
