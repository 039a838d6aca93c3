"""dcnet/regime.py: the ratios a report states beside the paper's."""
from dcnet import regime


def test_ratios_of_the_presto_paper_and_the_scaled_rig():
    paper = regime.ratios(10e9, 100e-6, buffer_bytes=128 * 1024, flowcell_bytes=65536, run_s=10)
    assert abs(paper["BDP (MTU packets)"] - 10e9 * 100e-6 / 8 / 1514) < 1e-9
    # a 128 KB port drains in 105 us at 10 Gbit/s, about one RTT of 100 us
    assert abs(paper["buffer / BDP"] - 1.048576) < 1e-6
    assert abs(paper["flowcell time / RTT"] - 0.524288) < 1e-6
    assert paper["RTOmin / RTT"] == 2000 and paper["delayed ACK / RTT"] == 400
    scaled = regime.ratios(10e6, 100e-6, buffer_bytes=128 * 1024, flowcell_bytes=65536)
    # the same port at 10 Mbit/s: a thousand times the RTT
    assert abs(scaled["buffer / BDP"] - 1048.576) < 1e-6
    assert scaled["run length (RTTs)"] is None


def test_table_leaves_out_what_neither_side_has():
    rows = regime.table(regime.ratios(1e9, 62e-6, cpu_busy=0.42), regime.ratios(1e9, 62e-6))
    text = "\n".join(rows)
    assert rows[0] == "| | this run | paper |"
    assert "flowcell" not in text and "| virtual CPU busy (most of any cell) | 42% | - |" in text
    assert "| link rate (Gbit/s) | 1.0 | 1.0 |" in text
