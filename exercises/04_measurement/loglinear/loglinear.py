"""Exercise 04b: the index function of a log-linear (HDR-style) histogram and
its inverse.  The task is in README.md; check it with
``python -m lowlat grade loglinear loglinear.py``."""

from __future__ import annotations


def sub_bucket_count(sig_figs: int) -> int:
    """S = 2^ceil(log2(2 * 10^sig_figs)): 2048 at 3 significant figures."""
    return 1 << (2 * 10**sig_figs - 1).bit_length()


def index_of(value: int, sig_figs: int) -> int:
    """The counter that ``value`` (an integer >= 0) is recorded in, for a
    histogram whose lowest value is 1."""
    # YOUR CODE HERE (see README.md)
    raise NotImplementedError("see README.md")


def lowest_value(index: int, sig_figs: int) -> int:
    """The smallest value recorded in counter ``index`` (the inverse of
    :func:`index_of`: ``index_of(lowest_value(i)) == i``)."""
    # YOUR CODE HERE (see README.md)
    raise NotImplementedError("see README.md")
