#!/usr/bin/env bash
# The physical path, on Debian 12 machines that are virtual: root
# filesystems built with debootstrap from Debian's archive, booted under QEMU
# on a virtual L2 with their own kernel, apt, systemd and sshd, and the
# playbook (site.yml) run against them for real, every role included:
# apt installs the dcnet packages (make packages) from the repository, the
# machines reboot into the dcnet kernel, Open vSwitch from the packages
# bridges their data-plane NIC, a workload runs and the report comes back.
#
#   testbed/physical/vmcluster.sh all      image, up, run, down (make testbed-vmcluster)
#   testbed/physical/vmcluster.sh image    the root filesystem (cached)
#   testbed/physical/vmcluster.sh up       boot the machines
#   testbed/physical/vmcluster.sh run [ANSIBLE-PLAYBOOK ARGS]
#   testbed/physical/vmcluster.sh ssh N [CMD]
#   testbed/physical/vmcluster.sh down
#   testbed/physical/vmcluster.sh newest-kernel DISK   the kernel a boot would pick
#
# The machines ("h1".."hN", DCNET_VMC_HOSTS, default 2) start from Debian's
# own bookworm kernel (linux-image-cloud-amd64, 6.1), iproute2 and
# openvswitch-switch, as a Debian host does before the playbook.  Each has
# two NICs: eth0 on the management bridge (10.250.0.N, ssh from the
# controller at 10.250.0.254) and eth1 on the data-plane bridge
# (10.251.0.N).  Both bridges, the taps and the controller's side live in a
# network namespace of their own (dcvmc): nothing is added to this host's
# network, and the machines reach nothing but each other and the controller.
#
# The "firmware" of a machine is this script: it boots the newest kernel
# in the machine's /boot (what GRUB's default entry would be) with its
# initramfs, read from the disk image with debugfs; QEMU runs with
# -no-reboot, so a reboot inside the machine ends QEMU and the next boot
# picks up the kernel the playbook installed.
#
# Layout: $BUILD/vmcluster/ holds the cached root filesystem (rootfs.tar,
# rebuilt when this script's package list changes) and its ssh key; the run
# directory (DCNET_VMC_OUT, default $RESULTS/vmcluster) holds the disks,
# consoles (console-hN.log), the inventory, ansible's log and the results.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-${XDG_CACHE_HOME:-$HOME/.cache}/dcnet/build}
RESULTS=${RESULTS:-$ROOT/results}
VENV=${VENV:-$ROOT/.venv}
CACHE=$BUILD/vmcluster
OUT=${DCNET_VMC_OUT:-$RESULTS/vmcluster}
N=${DCNET_VMC_HOSTS:-2}
MEM=${DCNET_VMC_MEM:-1536}
DISK=${DCNET_VMC_DISK:-6G}
NS=dcvmc
MIRROR=${DCNET_VMC_MIRROR:-http://deb.debian.org/debian}
QEMU=${DCNET_VMC_QEMU:-qemu-system-x86_64}
REPO=${DCNET_VMC_REPO:-$BUILD/packages/apt}
BOOT_TIMEOUT=${DCNET_VMC_BOOT_TIMEOUT:-900}
# 1: Presto through the playbook too (the controller role on this side at
# 10.250.0.254, the bridges connected to it, Presto GRO on the receivers)
PRESTO=${DCNET_VMC_PRESTO:-0}

# What a Debian host of the testbed has before the playbook (the
# playbook's own requirements, testbed/physical/README.md, and the Debian
# packages that dcnet's packages replace).
INCLUDE=systemd-sysv,udev,dbus,openssh-server,python3,python3-apt,iproute2,iperf3,sockperf,mptcpize,kmod,initramfs-tools,zstd,linux-image-cloud-amd64,openvswitch-switch,procps,iputils-ping,ethtool,tcpdump,less,apt-utils

say() { echo "vmcluster: $*" >&2; }
die() { say "error: $*"; exit 1; }

in_ns() { ip netns exec "$NS" "$@"; }

cmd_image() {
	local stamp
	stamp=$(echo "$INCLUDE $MIRROR" | sha256sum | cut -d' ' -f1)
	if [ -f "$CACHE/rootfs.tar" ] && [ "$(cat "$CACHE/rootfs.stamp" 2>/dev/null)" = "$stamp" ]; then
		return
	fi
	command -v debootstrap >/dev/null || die "no debootstrap (apt-get install debootstrap)"
	mkdir -p "$CACHE"
	local dir=$CACHE/rootfs t0=$SECONDS
	rm -rf "$dir"
	say "debootstrap bookworm ($MIRROR) into $dir"
	debootstrap --variant=minbase --include="$INCLUDE" bookworm "$dir" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 ||
		{ tail -20 "$CACHE/debootstrap.log" >&2; die "debootstrap failed (log: $CACHE/debootstrap.log)"; }
	[ -f "$CACHE/id_vmc" ] || ssh-keygen -q -t ed25519 -N '' -C dcnet-vmcluster -f "$CACHE/id_vmc"
	mkdir -p "$dir/root/.ssh"
	install -m 0600 "$CACHE/id_vmc.pub" "$dir/root/.ssh/authorized_keys"
	# host keys are made per machine at first boot (ssh-keygen -A below)
	rm -f "$dir"/etc/ssh/ssh_host_*
	echo "/dev/vda / ext4 defaults,errors=remount-ro 0 1" >"$dir/etc/fstab"
	# no network archive inside the cluster: apt sees only what the
	# playbook's repo role adds (the dcnet repository)
	: >"$dir/etc/apt/sources.list"
	rm -f "$dir"/etc/apt/sources.list.d/*
	cat >"$dir/etc/systemd/system/ssh-hostkeys.service" <<-'EOF'
	[Unit]
	Description=ssh host keys of this machine
	Before=ssh.service
	[Service]
	Type=oneshot
	ExecStart=/usr/bin/ssh-keygen -A
	[Install]
	WantedBy=multi-user.target
	EOF
	chroot "$dir" systemctl enable ssh-hostkeys.service systemd-networkd.service >/dev/null 2>&1
	chroot "$dir" systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer >/dev/null 2>&1 || true
	chroot "$dir" apt-get clean
	tar -C "$dir" --numeric-owner -cf "$CACHE/rootfs.tar.new" .
	mv "$CACHE/rootfs.tar.new" "$CACHE/rootfs.tar"
	rm -rf "$dir"
	echo "$stamp" >"$CACHE/rootfs.stamp"
	say "root filesystem: $CACHE/rootfs.tar ($(du -h "$CACHE/rootfs.tar" | cut -f1), $((SECONDS - t0)) s)"
}

mac() { printf '52:54:00:dc:%02x:%02x' "$1" "$2"; }

# disk-hN.img: the root filesystem with this machine's name and addresses.
make_disk() {
	local i=$1 dir=$OUT/stage-h$i
	rm -rf "$dir"
	mkdir -p "$dir"
	tar -C "$dir" --numeric-owner -xf "$CACHE/rootfs.tar"
	echo "h$i" >"$dir/etc/hostname"
	printf '127.0.0.1 localhost\n127.0.1.1 h%s\n' "$i" >"$dir/etc/hosts"
	for j in $(seq 1 "$N"); do echo "10.251.0.$j h$j-data" >>"$dir/etc/hosts"; done
	cat >"$dir/etc/systemd/network/10-mgmt.network" <<-EOF
	[Match]
	MACAddress=$(mac 0 "$i")
	[Network]
	Address=10.250.0.$i/24
	EOF
	cat >"$dir/etc/systemd/network/20-data.network" <<-EOF
	[Match]
	MACAddress=$(mac 1 "$i")
	[Network]
	Address=10.251.0.$i/24
	EOF
	rm -f "$OUT/disk-h$i.img"
	truncate -s "$DISK" "$OUT/disk-h$i.img"
	mkfs.ext4 -q -L root -d "$dir" "$OUT/disk-h$i.img"
	rm -rf "$dir"
}

# The newest kernel in the disk's /boot and its initramfs, as GRUB would
# boot it: "VERSION" of vmlinuz-VERSION.
newest_kernel() {
	debugfs -R "ls -p /boot" "$1" 2>/dev/null | awk -F/ '{print $6}' | sed -n 's/^vmlinuz-//p' |
		sort -V | tail -1
}

# One machine: boot, and boot again after each reboot, until the stop file.
machine() {
	local i=$1 img=$OUT/disk-h$i.img boots=0 k
	while [ ! -e "$OUT/stop" ]; do
		k=$(newest_kernel "$img")
		[ -n "$k" ] || { say "h$i: no kernel in /boot"; return 1; }
		debugfs -R "dump /boot/vmlinuz-$k $OUT/h$i.vmlinuz" "$img" >/dev/null 2>&1
		debugfs -R "dump /boot/initrd.img-$k $OUT/h$i.initrd" "$img" >/dev/null 2>&1
		boots=$((boots + 1))
		echo "$(date -u +%FT%TZ) boot $boots: $k" >>"$OUT/boots-h$i.log"
		in_ns "$QEMU" -machine q35 -accel tcg -cpu max -smp 1 -m "$MEM" -display none -no-reboot \
			-kernel "$OUT/h$i.vmlinuz" -initrd "$OUT/h$i.initrd" \
			-append "root=/dev/vda rw console=ttyS0 net.ifnames=0 quiet" \
			-drive "file=$img,if=virtio,format=raw,cache=unsafe" \
			-netdev "tap,id=m,ifname=vmc-m$i,script=no,downscript=no" \
			-device "virtio-net-pci,netdev=m,mac=$(mac 0 "$i")" \
			-netdev "tap,id=d,ifname=vmc-d$i,script=no,downscript=no" \
			-device "virtio-net-pci,netdev=d,mac=$(mac 1 "$i")" \
			-serial "file:$OUT/console-h$i.boot$boots.log" >>"$OUT/qemu-h$i.log" 2>&1 || true
	done
}

ssh_opts() {
	echo -i "$CACHE/id_vmc" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
		-o LogLevel=ERROR -o ConnectTimeout=5 -o BatchMode=yes
}

wait_ssh() {
	local i=$1 t0=$SECONDS
	# shellcheck disable=SC2046
	until in_ns ssh $(ssh_opts) "root@10.250.0.$i" true 2>/dev/null; do
		[ $((SECONDS - t0)) -lt "$BOOT_TIMEOUT" ] || die "h$i: no ssh after $BOOT_TIMEOUT s (console: $OUT/console-h$i.boot*.log)"
		sleep 5
	done
	say "h$i: ssh up after $((SECONDS - t0)) s ($(in_ns ssh $(ssh_opts) "root@10.250.0.$i" uname -r))"
}

cmd_up() {
	[ -f "$CACHE/rootfs.tar" ] || cmd_image
	! ip netns list | grep -qw "$NS" || die "namespace $NS exists (vmcluster.sh down)"
	rm -rf "$OUT"
	mkdir -p "$OUT"
	local i
	for i in $(seq 1 "$N"); do make_disk "$i"; done
	ip netns add "$NS"
	in_ns ip link set lo up
	in_ns ip link add vmc-mbr type bridge
	in_ns ip link add vmc-dbr type bridge
	in_ns ip addr add 10.250.0.254/24 dev vmc-mbr
	in_ns ip link set vmc-mbr up
	in_ns ip link set vmc-dbr up
	for i in $(seq 1 "$N"); do
		in_ns ip tuntap add dev "vmc-m$i" mode tap
		in_ns ip tuntap add dev "vmc-d$i" mode tap
		in_ns ip link set "vmc-m$i" master vmc-mbr up
		in_ns ip link set "vmc-d$i" master vmc-dbr up
	done
	for i in $(seq 1 "$N"); do
		# not on the caller's stdout: a pipe from `up` would stay open
		machine "$i" </dev/null >>"$OUT/machine-h$i.log" 2>&1 &
		echo $! >"$OUT/machine-h$i.pid"
	done
	for i in $(seq 1 "$N"); do wait_ssh "$i"; done
}

inventory() {
	{
		echo "all:"
		echo "  children:"
		echo "    dcnet:"
		echo "      vars:"
		echo "        ansible_user: root"
		echo "        ansible_python_interpreter: /usr/bin/python3"
		echo "        ansible_ssh_private_key_file: $CACHE/id_vmc"
		echo "        ansible_ssh_common_args: -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
		echo "        dcnet_dev: eth1"
		echo "      hosts:"
		for i in $(seq 1 "$N"); do
			echo "        h$i:"
			echo "          ansible_host: 10.250.0.$i"
			echo "          dcnet_ip: 10.251.0.$i"
		done
	} >"$OUT/inventory.yml"
}

cmd_run() {
	inventory
	[ -f "$REPO/Packages" ] || die "no repository in $REPO (make packages)"
	local t0=$SECONDS rc=0 presto=()
	case $PRESTO in
	1 | yes | true | on) presto=(-e dcnet_presto_controller=true -e dcnet_controller_address=10.250.0.254
		-e dcnet_presto_gro=true) ;;
	esac
	say "ansible-playbook site.yml, every role ($N machines; log: $OUT/ansible.log)"
	(cd "$HERE" && in_ns env ANSIBLE_CONFIG="$HERE/ansible.cfg" ANSIBLE_LOG_PATH="$OUT/ansible.log" \
		ANSIBLE_HOST_KEY_CHECKING=False ANSIBLE_NOCOLOR=1 ANSIBLE_TIMEOUT=120 \
		"$VENV/bin/ansible-playbook" -i "$OUT/inventory.yml" site.yml \
		-e "dcnet_apt_repo=$REPO" -e dcnet_kernel_source=repo -e dcnet_reboot_timeout="$BOOT_TIMEOUT" \
		-e dcnet_ovs=true -e dcnet_ovs_uplink=eth1 -e dcnet_ovs_prefixlen=24 \
		-e "dcnet_results=$OUT/results" -e dcnet_run=vmcluster -e dcnet_duration=10 \
		-e dcnet_report_args=--no-plots "${presto[@]}" \
		-e '{"dcnet_qdisc": ["qdisc add dev eth1 root handle 1: htb default 10", "class add dev eth1 parent 1: classid 1:10 htb rate 200mbit ecn_thresh 30kb ecn_mode ce"]}' \
		"$@") || rc=$?
	say "ansible-playbook exit $rc ($((SECONDS - t0)) s)"
	local i
	for i in $(seq 1 "$N"); do
		# shellcheck disable=SC2046
		in_ns ssh $(ssh_opts) "root@10.250.0.$i" \
			'echo "$(hostname) $(uname -r) $(dpkg-query -W -f="\${Package} \${Version}  " linux-image-$(uname -r) iproute2 openvswitch-switch dcnet-tools)"' \
			2>/dev/null | tee -a "$OUT/versions.txt" >&2 || true
	done
	return $rc
}

cmd_ssh() {
	local i=${1:?machine number}
	shift
	# shellcheck disable=SC2046
	in_ns ssh $(ssh_opts) "root@10.250.0.$i" "$@"
}

cmd_down() {
	[ -d "$OUT" ] && touch "$OUT/stop"
	local i
	if ip netns list | grep -qw "$NS"; then
		for i in $(seq 1 "$N"); do
			# shellcheck disable=SC2046
			in_ns ssh $(ssh_opts) "root@10.250.0.$i" poweroff >/dev/null 2>&1 || true
		done
		sleep 10
		pkill -f "ifname=vmc-m" 2>/dev/null || true
		sleep 1
		ip netns del "$NS"
	fi
	for f in "$OUT"/machine-h*.pid; do
		[ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
	done
	rm -f "$OUT"/disk-h*.img "$OUT"/h*.vmlinuz "$OUT"/h*.initrd
}

case "${1:-}" in
newest-kernel) newest_kernel "${2:?disk image}"; exit 0 ;;
esac
[ "$(id -u)" = 0 ] || die "needs root (network namespace, taps, debootstrap)"
case "${1:-all}" in
image) cmd_image ;;
up) cmd_up ;;
run) shift; cmd_run "$@" ;;
ssh) shift; cmd_ssh "$@" ;;
down) cmd_down ;;
all)
	t0=$SECONDS
	cmd_image
	trap cmd_down EXIT
	cmd_up
	rc=0
	cmd_run || rc=$?
	say "done in $((SECONDS - t0)) s: $OUT/results/vmcluster (versions: $OUT/versions.txt)"
	exit $rc
	;;
*) echo "usage: $0 [all|image|up|run [ARGS]|ssh N [CMD]|down]" >&2; exit 2 ;;
esac
