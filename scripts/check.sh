#!/usr/bin/env bash
# make check: host-side tests, then KUnit and the functional suite in the
# debug kernel.  The command is `python -m dcnet check` (dcnet/host/check.py);
# this script runs it with the same arguments (--host-only, --vms N, ...).
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" && exec "$ROOT/.venv/bin/python" -m dcnet check "$@"
