# NAME VIRTFS(0/1)
K=/root/.cache/dcnet/build/obj-release/arch/x86/boot/bzImage
S=""; [ "$3" = 1 ] && S="-serial file:/tmp/vt/x/$1.tar"; V=""; [ "$2" = 1 ] && { mkdir -p /tmp/vt/x/o$1; V="-virtfs local,path=/tmp/vt/x/o$1,mount_tag=dcnetout,security_model=none,id=dcnetout"; }
timeout 900 qemu-system-x86_64 -M pc -cpu max -smp 1 -m 2G -display none -nodefaults -no-reboot \
  -serial file:/tmp/vt/x/$1.txt -kernel $K -initrd /tmp/vt/x/img.cpio.gz \
  -append "console=ttyS0 no5lvl panic=-1 rdinit=/init quiet" \
  -icount shift=0,sleep=off -seed 1 -rtc base=2026-01-01T00:00:00,clock=vm $V $S > /dev/null 2>&1
sed -n '/^DETRUN-BEGIN/,/^DETRUN-END/p' /tmp/vt/x/$1.txt > /tmp/vt/x/$1.out
