import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
# dcnet (dcnet/wait.py's wait_until), as the guest's conftest does
if ROOT not in sys.path:
    sys.path.append(ROOT)
