#!/usr/bin/env bash
# Install what the project needs: Debian packages (apt) and a project-local
# Python virtual environment (.venv, from PyPI).  Idempotent and quick when
# everything is already there.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)

PACKAGES=(
	linux-source-6.12 build-essential bc bison flex libelf-dev libssl-dev dwarves
	cpio kmod rsync xz-utils zstd ccache git patch
	qemu-system-x86 busybox-static
	iproute2 ethtool iputils-ping iperf3 sockperf nuttcp tcpdump mptcpize
	libmnl-dev pkg-config patchelf
	meson ninja-build libglib2.0-dev libpixman-1-dev libfdt-dev
	openvswitch-source autoconf libcap-ng-dev
	python3 python3-venv
	openssh-server
	dpkg-dev debhelper fakeroot apt-utils
)

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}"
	SUDO=
	[ "$(id -u)" = 0 ] || SUDO=sudo
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update -qq
	$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	# openssh-server is for testbed/physical/selftest.sh, which runs sshd by
	# hand inside network namespaces: leave no system ssh service behind
	# (only when installed here; an ssh server that was already there stays)
	if [[ " ${missing[*]} " == *" openssh-server "* ]]; then
		if [ -d /run/systemd/system ]; then
			$SUDO systemctl disable --now ssh.service ssh.socket >/dev/null 2>&1 || true
		else
			$SUDO systemctl disable ssh.service >/dev/null 2>&1 || $SUDO update-rc.d ssh disable >/dev/null 2>&1 || true
			$SUDO /etc/init.d/ssh stop >/dev/null 2>&1 || true
		fi
	fi
fi

VENV=$ROOT/.venv
REQ=$ROOT/scripts/requirements.txt
stamp=$(sha256sum "$REQ" | cut -d' ' -f1)
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$VENV/.stamp" 2>/dev/null)" != "$stamp" ]; then
	echo "deps: creating $VENV"
	PY=$(command -v python3)
	"$PY" -m venv "$VENV"
	"$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQ"
	echo "$stamp" >"$VENV/.stamp"
fi
# the harness itself, the package dcnet (pyproject.toml), editable: the
# venv's Python imports it from this clone (-I: not from the working
# directory, whatever it is)
if ! "$VENV/bin/python" -I -c 'import os, sys, dcnet
sys.exit(os.path.realpath(dcnet.ROOT) != os.path.realpath(sys.argv[1]))' "$ROOT" 2>/dev/null; then
	echo "deps: installing the dcnet package (editable) into $VENV"
	"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e "$ROOT"
fi
echo "deps: ok ($(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null | sed 's/^/linux-source-6.12 /'), $("$VENV/bin/vng" --version))"
