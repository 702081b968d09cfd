"""The chapters print the core's own functions: every definition style the
core uses is found, with the line number it has in the file."""

from __future__ import annotations

import pytest

from lowlat.experiments.source import CSRC, c_function


@pytest.mark.parametrize(
    ("filename", "name"),
    [
        ("spsc_inline.h", "ll_spsc_push_many_inline"),  # static inline
        ("spsc_inline.h", "ll_spsc__free_slots"),  # an __attribute__((...)) before the name
        ("pipeline_run.c", "ll_pipeline_start"),  # a signature over two lines
        ("hist.c", "ll_hist_merge"),  # an exported function
    ],
)
def test_a_function_is_found_where_it_is(filename: str, name: str) -> None:
    first, text = c_function(filename, name)
    lines = (CSRC / filename).read_text().splitlines()
    assert name + "(" in lines[first - 1]
    assert text.splitlines()[0] == lines[first - 1] and text.rstrip().endswith("}")


def test_a_declaration_is_not_a_definition() -> None:
    with pytest.raises(ValueError, match="no definition of ll_nothing_here"):
        c_function("spsc.h", "ll_nothing_here")
