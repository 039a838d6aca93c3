"""python -m dcnet: the harness's one command (dcnet/cli.py)."""
import sys

from dcnet.cli import main

sys.exit(main())
