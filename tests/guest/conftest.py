import os

import pytest

from dcnet import config as dcnet_config
from dcnet.testbed.netlab import Lab


def pytest_configure(config):
    if os.geteuid() != 0 or not dcnet_config.get("DCNET_OUT"):
        raise pytest.UsageError("tests/guest runs inside the VM: scripts/check.sh (make check)")
    # The tools the tests execute, copied to the guest's tmpfs and first in
    # PATH (before the test modules read DCNET_TC): an exec from the 9p
    # root costs 0.3-0.8 s in the debug guest, from the toolbox a few ms.
    from dcnet.warm import install_for_guest
    install_for_guest()


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
