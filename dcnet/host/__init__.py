"""The host side: vmrun (boot a kernel, run a command in it), sealed (the
sealed guest's initramfs and QEMU command line), and make check's
check_summary, guest_shards and pytest_jsonl (a pytest plugin)."""
