"""dcnet/testbed/counters.py reads the MIB files the way the guest's /proc has
them, MPTCP's included (how many subflows joined is what moved MPTCP's
throughput between two boots of make testbed)."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dcnet.testbed import counters

NETSTAT = """TcpExt: SyncookiesSent TCPSACKReorder
TcpExt: 0 7
MPTcpExt: MPCapableSYNTX MPJoinSynTx MPJoinSynAckRx MPJoinAckRx
MPTcpExt: 2 14 9 0
IpExt: InNoRoutes InOctets
IpExt: 0 1234
"""


def test_mptcp_joins_are_read_and_summed(tmp_path):
    p = tmp_path / "netstat"
    p.write_text(NETSTAT)
    m = counters._mib(str(p))
    assert m == {"TcpExtTCPSACKReorder": 7, "MPTcpExtMPCapableSYNTX": 2, "MPTcpExtMPJoinSynTx": 14,
                 "MPTcpExtMPJoinSynAckRx": 9, "IpExtInOctets": 1234}
    for k in ("MPTcpExtMPJoinSynTx", "MPTcpExtMPJoinSynAckRx", "MPTcpExtMPJoinAckRx"):
        assert k in counters.TOTAL_KEYS
