"""The bench suite behind ``python -m lowlat bench``: every experiment of the
course run once, interleaved where variants are compared, as one flat dict
of numbers (:data:`KEYS` says each one's unit and meaning), printed as a
table or written as JSON.

The measurements themselves are :mod:`lowlat.experiments` (plus
:mod:`lowlat.core.pipeline` and :mod:`lowlat.train`); this package only runs and
reports them.
"""

from lowlat.bench.keys import KEYS
from lowlat.bench.report import format_table, progress_to_stderr, write_json
from lowlat.bench.results import BenchResults, StepFailure
from lowlat.bench.suite import run_all

__all__ = ["KEYS", "BenchResults", "StepFailure", "format_table", "progress_to_stderr", "run_all", "write_json"]
