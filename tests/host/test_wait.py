"""dcnet.wait.wait_until: returns the condition's value as soon as it holds,
fails with what never happened and the last value seen, and stretches its
bound by DCNET_TIMEOUT_SCALE."""
import itertools
import time

import pytest

from dcnet import wait
from dcnet.wait import WaitTimeout, wait_until


def test_returns_the_first_truthy_value():
    n = itertools.count()
    assert wait_until(lambda: next(n) >= 3 and "ready", 5, "the third poll", interval=0) == "ready"


def test_timeout_says_what_and_the_last_value(monkeypatch):
    monkeypatch.delenv("DCNET_TIMEOUT_SCALE", raising=False)
    t0 = time.monotonic()
    with pytest.raises(AssertionError) as e:
        wait_until(lambda: 0, 0.1, "the counter moved")
    assert 0.1 <= time.monotonic() - t0 < 2
    assert isinstance(e.value, WaitTimeout)
    assert "the counter moved" in str(e.value) and "last observed: 0" in str(e.value)


def test_the_condition_is_polled_at_least_once(monkeypatch):
    monkeypatch.delenv("DCNET_TIMEOUT_SCALE", raising=False)
    assert wait_until(lambda: "at once", 0, "a first poll") == "at once"


def test_timeout_scale(monkeypatch):
    monkeypatch.setenv("DCNET_TIMEOUT_SCALE", "3")
    assert wait.scaled(2) == 6
    # a bad value is an error that names it (dcnet/config.py), not a silent 1
    monkeypatch.setenv("DCNET_TIMEOUT_SCALE", "junk")
    with pytest.raises(SystemExit, match="DCNET_TIMEOUT_SCALE='junk'.*want a number"):
        wait.scaled(2)
    monkeypatch.setenv("DCNET_TIMEOUT_SCALE", "2")
    t0 = time.monotonic()
    with pytest.raises(WaitTimeout) as e:
        wait_until(lambda: None, 0.1, "never")
    assert time.monotonic() - t0 >= 0.2 and "0.2 s" in str(e.value)


def test_an_exception_in_the_condition_propagates():
    with pytest.raises(ZeroDivisionError):
        wait_until(lambda: 1 / 0, 5, "a broken condition")


def test_polls_back_off_to_the_cap(monkeypatch):
    """a long wait polls a few times a second, not a hundred: a poll that
    starts a process must not keep a slow guest's CPU busy"""
    monkeypatch.delenv("DCNET_TIMEOUT_SCALE", raising=False)
    n = itertools.count()
    with pytest.raises(WaitTimeout):
        wait_until(lambda: next(n) < 0, 1.5, "never")
    polls = next(n)
    # 10 ms, growing by half each time to 0.25 s: about 14 polls in 1.5 s
    assert 8 <= polls <= 25, polls
