# Sourced by scripts/iproute2.sh and scripts/qemu.sh.
#
# debsrc_fetch DIR PKG [VERSION]: download Debian's source package PKG
# (VERSION if the index has it, else the newest) into DIR, through a
# private deb-src list under DIR: the system's apt configuration is left
# as it is.
debsrc_fetch() {
	local dir=$1 pkg=$2 ver=${3:-}
	mkdir -p "$dir/sources.list.d" "$dir/lists/partial" "$dir/cache/archives/partial"
	cat >"$dir/sources.list.d/dcnet-src.sources" <<-EOF
	Types: deb-src
	URIs: http://deb.debian.org/debian
	Suites: bookworm
	Components: main
	Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOF
	local apt=(apt-get -qq -o Dir::Etc::SourceParts="$dir/sources.list.d" -o Dir::Etc::SourceList=/dev/null
		-o Dir::State::Lists="$dir/lists" -o Dir::Cache="$dir/cache")
	"${apt[@]}" update
	(cd "$dir" && { { [ -n "$ver" ] && "${apt[@]}" source --download-only "$pkg=$ver"; } ||
		"${apt[@]}" source --download-only "$pkg"; } 2>&1 | grep -v unsandboxed || true)
}
