"""The benches: d2tcp (D2TCP Figs. 6-7), htb (HTB ECN marking), fastlane
(FastLane), fastlane_clos (FastLane on the Clos testbed, across runs).
Each is host driver, guest program, analysis and report; bench/*.py are
their commands."""
