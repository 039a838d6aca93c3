import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "testbed"))

from netlab import Lab  # noqa: E402


def pytest_configure(config):
    if os.geteuid() != 0 or not os.environ.get("DCNET_OUT"):
        raise pytest.UsageError("tests/guest runs inside the VM: scripts/check.sh (make check)")


@pytest.fixture
def lab_factory():
    labs = []

    def make(names, prefix="t"):
        lab = Lab(names, prefix=prefix)
        labs.append(lab)
        return lab

    yield make
    for lab in labs:
        lab.close()
