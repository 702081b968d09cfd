"""Bad input across the public API and both command lines (the issue "every
bad input a clear error, no silent corruption, no hang"): each case either
raises a clear error (its type, and a message that says what was wrong and
what is allowed) or is handled right, and says which.

Cases that could hang or crash (the old behaviour of several of them) run in
a process of their own with a bounded timeout; the rest run here.  The CLI
cases check one line on stderr, exit status 2, no traceback, and that
nothing ran before the error was found.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HAS_TOOLS = (ROOT / "tools" / "__main__.py").exists()  # a student release has no tools/

PRELUDE = """
import math
import threading
import numpy as np
from lowlat import Histogram, Pool, SpscQueue
from lowlat.experiments import budget, measurement as measure
from lowlat.experiments import pipeline as pl
from lowlat.experiments.budget import Budget, reallocate
from lowlat.experiments.queues import spsc_python_batches
from lowlat.core.hist import HOUR_NS
from lowlat.core.pool import StaleBlockError
from lowlat.core.spsc import SpscContractError
from lowlat.train import batching, checkpoint, loader, roofline, stragglers
from lowlat.train.loader import HeavyTailSource, PrefetchLoader
from lowlat.train import overlap, precision
from lowlat.method import readings, flamegraph, gate as gates, profiling
from lowlat.machine import topology
from lowlat.experiments import troubleshoot, build_variants, memory_orders
from lowlat.core import toolchain
nan, inf = float("nan"), float("inf")
"""


@dataclass(frozen=True)
class Case:
    id: str
    code: str  # statements; with an error, the last one raises it
    error: str | None  # the exception's class name (or a base class's); None: handled right
    match: str  # error: a regex on its message; handled: an expression that must be true after the code
    isolate: bool = False  # in a process of its own (it could hang or crash)


def raises(id: str, code: str, error: str, match: str, *, isolate: bool = False) -> Case:
    return Case(id, code, error, match, isolate)


def handled(id: str, code: str, check: str, *, isolate: bool = False) -> Case:
    return Case(id, code, None, check, isolate)


CASES = [
    # ---- Pool ---------------------------------------------------------------------------------------------
    raises(
        "pool-cache-aligned-str",
        "Pool(8, 4, cache_aligned='no')",
        "TypeError",
        "cache_aligned must be True or False, got str 'no'",
    ),
    raises(
        "pool-cache-aligned-int",
        "Pool(8, 4, cache_aligned=1)",
        "TypeError",
        "cache_aligned must be True or False, got int",
    ),
    raises("pool-block-size-str", "Pool('8', 4)", "TypeError", "block_size must be an integer, got str"),
    raises("pool-count-negative", "Pool(8, -1)", "ValueError", "count must be >= 1 block, got -1"),
    raises("pool-huge", "Pool(10**30, 4)", "ValueError", "overflows; the pool must fit in"),
    raises(
        "pool-stale-free-after-reset",
        "p = Pool(8, 2); a = p.alloc(); p.reset(); b = p.alloc(); p.free(a)",
        "StaleBlockError",
        "free\\(\\) of block 0 .* the pool was reset since it was allocated",
    ),
    handled(
        "pool-reset-then-live-block-safe",
        "p = Pool(8, 2); a = p.alloc(); p.reset(); b = p.alloc()\ntry:\n    p.free(a)\nexcept StaleBlockError:\n    pass\nc = p.alloc()",
        "c.address != b.address and b.valid and p.in_use == 2",
    ),
    raises(
        "pool-stale-view-after-reset",
        "p = Pool(8, 2); a = p.alloc(); p.reset(); a.view()",
        "StaleBlockError",
        "view\\(\\) of block 0 .* no longer yours",
    ),
    raises(
        "pool-stale-free-after-realloc",
        "p = Pool(8, 1); a = p.alloc(); p.free(a); b = p.alloc(); p.free(a)",
        "StaleBlockError",
        "a later alloc\\(\\) has been handed the same memory",
    ),
    raises(
        "pool-stale-view-after-free",
        "p = Pool(8, 1); a = p.alloc(); p.free(a); a.view()",
        "StaleBlockError",
        "it was freed",
    ),
    raises(
        "pool-double-free",
        "p = Pool(8, 1); a = p.alloc(); p.free(a); p.free(a)",
        "DoubleFreeError",
        "double free: block 0 .* is already free",
    ),
    raises(
        "pool-foreign-block",
        "p, q = Pool(8, 1), Pool(8, 1); p.free(q.alloc())",
        "ForeignPointerError",
        "belongs to another pool",
    ),
    raises(
        "pool-free-str", "Pool(8, 1).free('block')", "TypeError", "free\\(\\) takes a Block or an int address, got str"
    ),
    raises(
        "pool-free-bool", "Pool(8, 1).free(True)", "TypeError", "free\\(\\) takes a Block or an int address, got bool"
    ),
    raises("pool-free-huge-address", "Pool(8, 1).free(2**70)", "ForeignPointerError", "is not a block of this pool"),
    raises("pool-exhausted", "p = Pool(8, 1); p.alloc(); p.alloc()", "PoolExhaustedError", "all 1 blocks are in use"),
    raises("pool-owns-str", "Pool(8, 1).owns('x')", "TypeError", "owns\\(\\) takes a Block or an int address, got str"),
    handled("pool-owns-huge", "r = Pool(8, 1).owns(2**70)", "r is False"),
    # ---- SpscQueue --------------------------------------------------------------------------------------------
    handled("spsc-dtype-none-is-uint64", "q = SpscQueue(8, None)", "q.dtype == np.uint64"),
    raises("spsc-padded-str", "SpscQueue(8, padded='no')", "TypeError", "padded must be True or False, got str 'no'"),
    raises("spsc-cached-int", "SpscQueue(8, cached=0)", "TypeError", "cached must be True or False, got int 0"),
    raises(
        "spsc-dtype-bool", "SpscQueue(8, True)", "TypeError", "dtype must be a numpy dtype or a record size in bytes"
    ),
    raises("spsc-record-size-huge", "SpscQueue(8, 10**30)", "ValueError", "record size must be <= 2147483647 bytes"),
    raises("spsc-too-many-bytes", "SpscQueue(2**38, 8)", "ValueError", "at most 2\\*\\*40 bytes are allowed"),
    raises(
        "spsc-capacity-not-pow2",
        "SpscQueue(1000)",
        "ValueError",
        "capacity must be a power of two >= 2, got 1000 \\(nearest allowed: 512 or 1024\\)",
    ),
    raises(
        "spsc-push-float",
        "SpscQueue(8).try_push(1.9)",
        "TypeError",
        "cannot store 1.9 as a uint64 record: an integer is needed, got float",
    ),
    raises(
        "spsc-push-str",
        "SpscQueue(8).try_push('3')",
        "TypeError",
        "cannot store '3' as a uint64 record: an integer is needed, got str",
    ),
    raises("spsc-push-bool", "SpscQueue(8).try_push(True)", "TypeError", "an integer is needed, got bool"),
    raises("spsc-push-none", "SpscQueue(8).try_push(None)", "TypeError", "an integer is needed, got NoneType"),
    raises(
        "spsc-push-negative",
        "SpscQueue(8).try_push(-1)",
        "OverflowError",
        "cannot store -1 as a uint64 record: it must be in \\[0, 18446744073709551615\\]",
    ),
    raises(
        "spsc-push-too-big",
        "SpscQueue(8).try_push(2**64)",
        "OverflowError",
        "it must be in \\[0, 18446744073709551615\\]",
    ),
    raises(
        "spsc-push-numpy-negative",
        "SpscQueue(8).try_push(np.int64(-1))",
        "OverflowError",
        "cannot store np.int64\\(-1\\) as a uint64 record",
    ),
    raises(
        "spsc-int8-overflow", "SpscQueue(8, np.int8).try_push(200)", "OverflowError", "it must be in \\[-128, 127\\]"
    ),
    raises(
        "spsc-float-queue-str",
        "SpscQueue(8, np.float64).try_push('3')",
        "TypeError",
        "cannot store '3' as a float64 record: a number is needed",
    ),
    raises(
        "spsc-float-queue-complex", "SpscQueue(8, np.float64).try_push(1 + 2j)", "TypeError", "a real number is needed"
    ),
    handled("spsc-float-queue-int", "q = SpscQueue(8, np.float64); q.try_push(5)", "q.try_pop() == 5.0"),
    handled(
        "spsc-push-refused-stores-nothing",
        "q = SpscQueue(8)\ntry:\n    q.try_push(1.9)\nexcept TypeError:\n    pass",
        "len(q) == 0",
    ),
    raises(
        "spsc-push-many-list",
        "SpscQueue(8).push_many([1, 2])",
        "TypeError",
        "records must be a numpy array of dtype uint64, got list",
    ),
    raises(
        "spsc-push-many-dtype",
        "SpscQueue(8).push_many(np.arange(3, dtype=np.int32))",
        "TypeError",
        "records must have dtype uint64, got int32",
    ),
    raises(
        "spsc-pop-array-str", "SpscQueue(8).pop_array('3')", "TypeError", "max_records must be an integer, got str '3'"
    ),
    raises(
        "spsc-pop-array-float", "SpscQueue(8).pop_array(1.5)", "TypeError", "max_records must be an integer, got float"
    ),
    raises("spsc-pop-array-negative", "SpscQueue(8).pop_array(-1)", "ValueError", "max_records must be >= 0, got -1"),
    handled("spsc-pop-array-huge", "q = SpscQueue(8); q.try_push(4); a = q.pop_array(10**12)", "a.tolist() == [4]"),
    raises(
        "spsc-pop-many-readonly",
        "a = np.zeros(4, np.uint64); a.flags.writeable = False; SpscQueue(8).pop_many(a)",
        "ValueError",
        "out must be writable",
    ),
    raises(
        "spsc-second-producer",
        "q = SpscQueue(8); q.try_push(1)\nerr = []\ndef f():\n    try:\n        q.try_push(2)\n    except Exception as e:\n        err.append(e)\nt = threading.Thread(target=f, name='second'); t.start(); t.join()\nraise err[0]",
        "SpscContractError",
        "try_push from thread 'second', but thread 'MainThread' is this queue's producer.*release_producer",
    ),
    raises(
        "spsc-second-producer-batch",
        "q = SpscQueue(8); q.push_many(np.arange(2, dtype=np.uint64))\nerr = []\ndef f():\n    try:\n        q.push_many(np.arange(2, dtype=np.uint64))\n    except Exception as e:\n        err.append(e)\nt = threading.Thread(target=f); t.start(); t.join()\nraise err[0]",
        "SpscContractError",
        "push_many from thread .* is this queue's producer",
    ),
    raises(
        "spsc-second-consumer",
        "q = SpscQueue(8); q.try_pop()\nerr = []\ndef f():\n    try:\n        q.pop_many(np.zeros(2, np.uint64))\n    except Exception as e:\n        err.append(e)\nt = threading.Thread(target=f); t.start(); t.join()\nraise err[0]",
        "SpscContractError",
        "pop_many from thread .* is this queue's consumer.*release_consumer",
    ),
    handled(
        "spsc-hand-over",
        "q = SpscQueue(8); q.try_push(1); q.release_producer()\nt = threading.Thread(target=lambda: q.try_push(2)); t.start(); t.join()",
        "q.pop_array().tolist() == [1, 2]",
    ),
    handled(
        "spsc-racing-producers-no-corruption",
        "q = SpscQueue(1 << 16); out = []; go = threading.Barrier(2)\n"
        "def f(k):\n    go.wait()\n    try:\n        for i in range(20_000):\n            while not q.try_push(k * 10**6 + i):\n                pass\n"
        "    except SpscContractError:\n        out.append(k)\n"
        "ts = [threading.Thread(target=f, args=(k,)) for k in (1, 2)]\n[t.start() for t in ts]; [t.join() for t in ts]\n"
        "(k,) = {1, 2} - set(out)",
        "len(out) == 1 and len(q) == 20_000 and q.pop_array(1 << 16).tolist() == [k * 10**6 + i for i in range(20_000)]",
    ),
    # ---- Histogram ---------------------------------------------------------------------------------------------
    handled(
        "hist-corrected-huge-backfill",
        "h = Histogram(); h.record_corrected(10**12, 1)",
        "h.count == 10**12 and h.min == 1 and abs(h.mean - (10**12 + 1) / 2) < 1",
        isolate=True,
    ),
    handled(
        "hist-corrected-array-huge-backfill",
        "h = Histogram(); h.record_many_corrected(np.full(100, 10**11), 1)",
        "h.count == 100 * 10**11",
        isolate=True,
    ),
    raises(
        "hist-empty-percentile",
        "Histogram().percentile(50)",
        "ValueError",
        "P50 of an empty histogram: no value has been recorded",
    ),
    raises("hist-empty-summary", "Histogram().summary()", "ValueError", "empty histogram"),
    raises(
        "hist-percentile-nan",
        "h = Histogram(); h.record(5); h.percentile(nan)",
        "ValueError",
        "percentile must be in \\[0, 100\\], got nan",
    ),
    raises(
        "hist-percentile-str",
        "Histogram().percentile('50')",
        "TypeError",
        "percentile must be a number in \\[0, 100\\], got str",
    ),
    raises(
        "hist-percentiles-int",
        "Histogram().percentiles(50)",
        "TypeError",
        "percentiles\\(\\) takes an iterable of numbers in \\[0, 100\\], got int",
    ),
    raises("hist-record-negative", "Histogram().record(-1)", "ValueError", "value must be >= 0, got -1"),
    raises("hist-record-float", "Histogram().record(1.5)", "TypeError", "value must be an integer, got float"),
    raises("hist-record-str", "Histogram().record('5')", "TypeError", "value must be an integer, got str"),
    raises(
        "hist-record-above-range",
        "h = Histogram(1, 1000); h.record(h.highest_trackable + 1)",
        "ValueError",
        "is above the histogram's range \\(highest trackable 2047\\)",
    ),
    raises("hist-record-count-zero", "Histogram().record(5, 0)", "ValueError", "count must be >= 1, got 0"),
    raises(
        "hist-record-count-huge", "Histogram().record(5, 10**30)", "ValueError", "count must be <= 18446744073709551615"
    ),
    raises(
        "hist-corrected-interval-negative",
        "Histogram().record_corrected(5, -1)",
        "ValueError",
        "expected_interval must be >= 0, got -1",
    ),
    raises(
        "hist-corrected-interval-huge",
        "Histogram().record_corrected(5, 10**30)",
        "ValueError",
        "expected_interval must be <= 18446744073709551615",
    ),
    raises(
        "hist-record-many-none",
        "Histogram().record_many(None)",
        "TypeError",
        "values must be an integer array or an iterable of ints \\(ns\\), got NoneType",
    ),
    raises("hist-record-many-int", "Histogram().record_many(5)", "TypeError", "got int"),
    raises("hist-record-many-str", "Histogram().record_many('123')", "TypeError", "got str"),
    raises(
        "hist-record-many-floats",
        "Histogram().record_many(np.array([1.0, 2.0]))",
        "TypeError",
        "values must be an integer array \\(ns\\), got dtype float64",
    ),
    raises(
        "hist-record-many-negative",
        "Histogram().record_many(np.array([1, -5]))",
        "ValueError",
        "values must be >= 0, got a minimum of -5",
    ),
    raises("hist-merge-list", "Histogram().merge([1, 2])", "TypeError", "merge\\(\\) takes a Histogram, got list"),
    raises("hist-lowest-zero", "Histogram(0)", "ValueError", "lowest must be >= 1, got 0"),
    raises("hist-sig-figs", "Histogram(sig_figs=6)", "ValueError", "sig_figs must be 1..5, got 6"),
    raises("hist-highest-too-big", "Histogram(1, 2**64)", "ValueError", "highest must be <= 18446744073709551615"),
    # ---- pipeline -----------------------------------------------------------------------------------------------
    raises(
        "pipeline-rate-tiny",
        "pl.run(pl.best_config(), rate=0.05)",
        "ValueError",
        "an open loop of 200,000 ticks at 0.05 ticks/s would run 4,000,000 s; at most 600 s",
        isolate=True,
    ),
    raises(
        "pipeline-rate-zero",
        "pl.run(pl.best_config(10), rate=0.0)",
        "ValueError",
        "rate must be in \\(0, 1e9\\] ticks per second",
    ),
    raises("pipeline-rate-nan", "pl.run(pl.best_config(10), rate=nan)", "ValueError", "rate must be in \\(0, 1e9\\]"),
    raises(
        "pipeline-rate-str",
        "pl.run(pl.best_config(10), rate='fast')",
        "TypeError",
        "rate must be a number of ticks per second",
    ),
    raises(
        "pipeline-busy-work-too-long",
        "pl.run(pl.best_config(), work_ns=(10**9,) * 4)",
        "ValueError",
        "is 800,000 s of busy work; at most 600 s",
        isolate=True,
    ),
    raises(
        "pipeline-work-not-tuple",
        "pl.run(pl.best_config(10), work_ns=5)",
        "TypeError",
        "work_ns must be a tuple of 4 ints",
    ),
    raises(
        "pipeline-work-two-stages",
        "pl.run(pl.best_config(10), work_ns=(1, 2))",
        "ValueError",
        "work_ns needs one value per stage",
    ),
    raises(
        "pipeline-work-negative",
        "pl.run(pl.best_config(10), work_ns=(-1, 0, 0, 0))",
        "ValueError",
        "work_ns must be >= 0, got -1",
    ),
    raises(
        "pipeline-capacity-huge",
        "pl.run(pl.best_config(10), capacity=2**30)",
        "ValueError",
        "capacity must be <= 16777216 ticks",
    ),
    raises(
        "pipeline-hold-huge",
        "pl.run(pl.best_config(10), hold_ns=10**20)",
        "ValueError",
        "hold_ns must be <= 3600000000000",
    ),
    raises(
        "pipeline-ticks-float",
        "pl.run(pl.best_config(10), ticks=1.5)",
        "TypeError",
        "ticks must be an integer, got float",
    ),
    raises("pipeline-ticks-huge", "pl.run(pl.best_config(10), ticks=10**9)", "ValueError", "ticks must be <= 50000000"),
    raises(
        "pipeline-cpus-single",
        "pl.run(pl.best_config(10), cpus=(0,))",
        "TypeError",
        "cpus must be a \\(producer, consumer\\) pair or None",
    ),
    raises(
        "pipeline-unknown-field",
        "pl.run(pl.best_config(10), tick=5)",
        "TypeError",
        "unknown PipelineConfig field\\(s\\) tick; the fields are ticks",
    ),
    raises(
        "pipeline-config-str",
        "pl.run('best')",
        "TypeError",
        "config must be a PipelineConfig \\(or None for the defaults\\), got str",
    ),
    raises("pipeline-best-config-ticks-str", "pl.best_config('x')", "TypeError", "ticks must be an integer, got str"),
    raises("pipeline-seed-config-ticks-zero", "pl.seed_config(0)", "ValueError", "ticks must be >= 1, got 0"),
    raises(
        "pipeline-summary-misspelt",
        "pl.run(pl.best_config(100)).summary('sentt')",
        "ValueError",
        "which must be one of 'intended', 'sent'; got 'sentt'",
    ),
    raises(
        "pipeline-summary-nothing-processed",
        "import dataclasses\nr = pl.run(pl.best_config(100))\ndataclasses.replace(r, intended=Histogram()).summary()",
        "ValueError",
        "no tick was processed .* there is no latency to summarise",
    ),
    # ---- budgets -------------------------------------------------------------------------------------------------
    raises(
        "budget-total-inf",
        "Budget(inf, [('parse', 10)])",
        "ValueError",
        "total_us must be a finite number of us > 0, got inf",
    ),
    raises(
        "budget-total-nan",
        "Budget(nan, [('parse', 10)])",
        "ValueError",
        "total_us must be a finite number of us > 0, got nan",
    ),
    raises(
        "budget-total-str",
        "Budget('100', [('parse', 10)])",
        "TypeError",
        "total_us must be a finite number of us > 0, got str",
    ),
    raises(
        "budget-allotment-inf",
        "Budget(100, [('parse', inf)])",
        "ValueError",
        "the allotment of stage 'parse' must be a finite number of us > 0, got inf",
    ),
    raises(
        "budget-allotments-overflow",
        "Budget(100, [('a', 60), ('b', 60)])",
        "ValueError",
        "the allotments sum to 120 us, more than the total budget of 100 us",
    ),
    raises(
        "budget-stage-not-pair",
        "Budget(100, [5])",
        "TypeError",
        "each stage must be a \\(name, allotment in us\\) pair, got 5",
    ),
    raises(
        "budget-stages-int",
        "Budget(100, 5)",
        "TypeError",
        "stages must map names to allotments \\(us\\) or be \\(name, us\\) pairs, got int",
    ),
    raises(
        "budget-stage-name-int",
        "Budget(100, [(1, 5)])",
        "TypeError",
        "a stage's name must be a non-empty string, got 1",
    ),
    raises(
        "budget-sample-nan",
        "Budget(100, [('parse', 10)]).report({'parse': [1000.0, nan]})",
        "ValueError",
        "stage 'parse' has 1 NaN sample\\(s\\) \\(the first at index 1: nan\\); samples must be finite durations >= 0 and <= 1e\\+15 ns",
    ),
    raises(
        "budget-sample-inf",
        "Budget(100, [('parse', 10)]).report({'parse': [inf]})",
        "ValueError",
        "stage 'parse' has 1 infinite sample\\(s\\)",
    ),
    raises(
        "budget-sample-negative",
        "Budget(100, [('parse', 10)]).report({'parse': [5.0, -5.0]})",
        "ValueError",
        "stage 'parse' has 1 negative sample\\(s\\) \\(the first at index 1: -5.0\\)",
    ),
    raises(
        "budget-sample-str",
        "Budget(100, [('parse', 10)]).report({'parse': ['x']})",
        "TypeError",
        "stage 'parse': samples must be numbers of ns",
    ),
    raises(
        "budget-sample-bool",
        "Budget(100, [('parse', 10)]).report({'parse': [True]})",
        "TypeError",
        "samples must be numbers of ns, got booleans",
    ),
    raises(
        "budget-samples-empty",
        "Budget(100, [('parse', 10)]).report({'parse': []})",
        "ValueError",
        "stage 'parse' has no samples",
    ),
    raises(
        "budget-samples-list",
        "Budget(100, [('parse', 10)]).report([1, 2])",
        "TypeError",
        "samples_ns must map each stage's name to its samples",
    ),
    raises(
        "budget-percentile-nan",
        "Budget(100, [('parse', 10)]).report({'parse': [1]}, nan)",
        "ValueError",
        "percentile must be in \\[0, 100\\], got nan",
    ),
    raises(
        "budget-percentile-str",
        "Budget(100, [('parse', 10)]).report({'parse': [1]}, '99')",
        "TypeError",
        "percentile must be a number in \\[0, 100\\], got str",
    ),
    raises(
        "budget-reallocate-nan",
        "reallocate({'a': nan, 'b': 1.0}, 10)",
        "ValueError",
        "the measured need of stage 'a' must be a finite number of us >= 0, got nan",
    ),
    raises(
        "budget-reallocate-negative",
        "reallocate({'a': -5.0, 'b': 1.0}, 10)",
        "ValueError",
        "the measured need of stage 'a' must be a finite number of us >= 0, got -5.0",
    ),
    raises(
        "budget-reallocate-total-inf",
        "reallocate({'a': 1.0}, inf)",
        "ValueError",
        "total_us must be a finite number of us > 0, got inf",
    ),
    raises(
        "budget-reallocate-empty",
        "reallocate({}, 10)",
        "ValueError",
        "reallocate needs at least one stage's measured time",
    ),
    raises(
        "budget-attribute-nan",
        "budget.attribute([('a', 10.0, nan)], 100)",
        "ValueError",
        "the measured time of stage 'a' must be a finite number of us >= 0, got nan",
    ),
    # ---- measurement ------------------------------------------------------------------------------------------------
    raises(
        "decide-nan",
        "measure.decide('x', nan, nan, p50_budget_ns=1000, p99_budget_ns=10000)",
        "ValueError",
        "p50_ns must be a finite number >= 0, got nan",
    ),
    raises(
        "decide-budget-zero",
        "measure.decide('x', 1, 2, p50_budget_ns=0, p99_budget_ns=10000)",
        "ValueError",
        "p50_budget_ns must be a finite number > 0, got 0",
    ),
    raises(
        "decide-p99-below-p50",
        "measure.decide('x', 500, 100, p50_budget_ns=1000, p99_budget_ns=10000)",
        "ValueError",
        "p99_ns \\(100\\) is below p50_ns \\(500\\)",
    ),
    raises(
        "decide-throughput-half",
        "measure.decide('x', 1, 2, p50_budget_ns=10, p99_budget_ns=10, items_per_s=5.0)",
        "ValueError",
        "give items_per_s and target_items_per_s together",
    ),
    raises(
        "decide-throughput-str",
        "measure.decide('x', 1, 2, p50_budget_ns=10, p99_budget_ns=10, items_per_s='5', target_items_per_s=1.0)",
        "TypeError",
        "items_per_s must be a finite number >= 0, got str",
    ),
    raises(
        "gate-candidate-nan",
        "measure.gate('g', lambda: 10.0, lambda: nan)",
        "ValueError",
        "candidate returned nan: costs must be finite numbers > 0",
    ),
    raises(
        "gate-candidate-zero",
        "measure.gate('g', lambda: 10.0, lambda: 0.0)",
        "ValueError",
        "candidate returned 0.0: costs must be finite numbers > 0",
    ),
    raises(
        "gate-candidate-negative",
        "measure.gate('g', lambda: 10.0, lambda: -1.0)",
        "ValueError",
        "candidate returned -1.0",
    ),
    raises(
        "gate-candidate-none", "measure.gate('g', lambda: 10.0, lambda: None)", "ValueError", "candidate returned None"
    ),
    raises("gate-baseline-inf", "measure.gate('g', lambda: inf, lambda: 1.0)", "ValueError", "baseline returned inf"),
    raises(
        "gate-threshold-str",
        "measure.gate('g', lambda: 1.0, lambda: 1.0, threshold='0.1')",
        "TypeError",
        "threshold must be a number in \\(0, 1\\), got str",
    ),
    raises(
        "gate-rounds-huge",
        "measure.gate('g', lambda: 1.0, lambda: 1.0, rounds=10**30)",
        "ValueError",
        "rounds must be <= 10000",
        isolate=True,
    ),
    raises(
        "gate-not-callable", "measure.gate('g', 10.0, lambda: 1.0)", "TypeError", "baseline must be a function to call"
    ),
    raises("repeat-ns-huge", "measure.repeat_ns(lambda: None, 10**30)", "ValueError", "repeats must be <= 100000000"),
    raises(
        "omission-schedule-huge",
        "measure.omission_scenario(interval_ns=1)",
        "ValueError",
        "the schedule would hold 100,000,010,002 requests .* at most 100,000,000",
    ),
    raises(
        "omission-stall-after-end",
        "measure.omission_scenario(requests=10, stall_at=11)",
        "ValueError",
        "stall_at must be <= 10, got 11",
    ),
    raises("heavy-tailed-negative", "measure.heavy_tailed(-1)", "ValueError", "n must be >= 1, got -1"),
    raises("heavy-tailed-seed-negative", "measure.heavy_tailed(5, seed=-1)", "ValueError", "seed must be >= 0, got -1"),
    raises("perf-stat-str", "measure.perf_stat('true')", "TypeError", "cmd must be a non-empty list of strings"),
    # ---- experiments ---------------------------------------------------------------------------------------------------
    raises(
        "spsc-python-batches-zero",
        "spsc_python_batches(1000, batch=0)",
        "ValueError",
        "batch must be >= 1, got 0",
        isolate=True,
    ),
    raises("spsc-python-batches-items-huge", "spsc_python_batches(10**10)", "ValueError", "items must be <= 100000000"),
    raises(
        "spsc-python-batches-capacity",
        "spsc_python_batches(1000, capacity=1000)",
        "ValueError",
        "capacity must be a power of two >= 2, got 1000",
    ),
    # ---- training: the loader ---------------------------------------------------------------------------------------------
    raises(
        "loader-next-after-close",
        "ld = PrefetchLoader(range(10), 2); it = iter(ld); next(it); ld.close(); next(it)",
        "RuntimeError",
        "this pass over the PrefetchLoader has ended: the loader was closed .* start a new pass with iter\\(loader\\)",
        isolate=True,
    ),
    raises(
        "loader-next-after-close-inline",
        "ld = PrefetchLoader(range(10), 0); it = iter(ld); next(it); ld.close(); next(it)",
        "RuntimeError",
        "has ended: the loader was closed",
        isolate=True,
    ),
    raises(
        "loader-two-iterators",
        "ld = PrefetchLoader(range(10), 2); a = iter(ld); next(a); b = iter(ld); next(b); next(a)",
        "RuntimeError",
        "has ended: a newer iter\\(\\) over the same loader started another pass \\(one pass at a time\\)",
        isolate=True,
    ),
    handled(
        "loader-second-pass-complete",
        "ld = PrefetchLoader(range(10), 2); a = iter(ld); next(a); b = iter(ld)",
        "list(b) == list(range(10)) and not ld.running",
        isolate=True,
    ),
    handled(
        "loader-new-pass-after-close",
        "ld = PrefetchLoader(range(5), 3); it = iter(ld); next(it); ld.close()",
        "list(ld) == [0, 1, 2, 3, 4]",
        isolate=True,
    ),
    raises("loader-not-iterable", "PrefetchLoader(5, 2)", "TypeError", "PrefetchLoader reads an iterable .* got int"),
    raises(
        "loader-close-timeout-nan",
        "PrefetchLoader(range(3)).close(nan)",
        "ValueError",
        "timeout_s must be a finite number >= 0 and <= 86400, got nan",
    ),
    raises(
        "loader-source-median-inf",
        "HeavyTailSource(median_ms=inf)",
        "ValueError",
        "median_ms must be a finite number >= 0 and <= 60000, got inf",
    ),
    raises(
        "loader-source-median-str",
        "HeavyTailSource(median_ms='1')",
        "TypeError",
        "median_ms must be a number >= 0 and <= 60000, got str",
    ),
    raises("loader-source-n-huge", "HeavyTailSource(n=10**30)", "ValueError", "n must be <= 100000000"),
    raises(
        "loader-step-inf",
        "loader.SimulatedStep(inf)",
        "ValueError",
        "step_ms must be a finite number > 0 and <= 10000, got inf",
        isolate=True,
    ),
    raises(
        "loader-step-huge",
        "loader.SimulatedStep(1e30)",
        "ValueError",
        "step_ms must be <= 10000, got 1e\\+30",
        isolate=True,
    ),
    raises(
        "loader-epoch-step-not-callable", "loader.train_epoch(range(3), 1, 5)", "TypeError", "step must be callable"
    ),
    raises(
        "loader-depth-sweep-int",
        "loader.depth_sweep(range(3), 4, None)",
        "TypeError",
        "depths must be a sequence of prefetch depths",
    ),
    # ---- training: batching, roofline, stragglers, checkpoints ---------------------------------------------------------------
    raises(
        "batching-sizes-empty",
        "batching.batch_sweep(sizes=())",
        "ValueError",
        "sizes must hold at least one batch size",
    ),
    raises(
        "batching-sizes-int",
        "batching.batch_sweep(sizes=64)",
        "TypeError",
        "sizes must be a sequence of batch sizes, got int",
    ),
    raises(
        "batching-matrix-huge",
        "batching.compare_row_norms(10**6, 10**6)",
        "ValueError",
        "rows x cols = 1,000,000,000,000 float64s; at most 10\\*\\*8",
    ),
    raises(
        "batching-norms-list",
        "batching.row_norms_batched([1.0, 2.0])",
        "TypeError",
        "x must be a 2-D numpy array of numbers \\(rows x columns\\), got a list",
    ),
    raises("batching-norms-1d", "batching.row_norms_per_row(np.ones(3))", "TypeError", "got a 1-D float64 array"),
    raises("batching-ffi-huge", "batching.ffi_costs(10**30)", "ValueError", "n must be <= 1000000"),
    raises("roofline-matmul-huge", "roofline.matmul_kernel(10**6)", "ValueError", "n must be <= 8192"),
    raises("roofline-copy-huge", "roofline.copy_bandwidth(10**30)", "ValueError", "nbytes must be <= 4294967296"),
    raises(
        "roofline-sizes-empty",
        "roofline.measure(())",
        "TypeError",
        "matmul_sizes must be a non-empty tuple of matrix sizes",
    ),
    raises(
        "checkpoint-cost-str",
        "checkpoint.young_interval('x', 10)",
        "TypeError",
        "cost must be a number > 0, got str 'x'",
    ),
    raises(
        "checkpoint-mtbf-inf",
        "checkpoint.daly_interval(1, inf)",
        "ValueError",
        "mtbf must be a finite number > 0, got inf",
    ),
    raises(
        "checkpoint-cost-nan",
        "checkpoint.expected_goodput(5, nan, 10)",
        "ValueError",
        "cost must be a finite number >= 0, got nan",
    ),
    handled("checkpoint-hopeless-interval", "g = checkpoint.expected_goodput(1e30, 1, 10)", "g == 0.0"),
    raises(
        "checkpoint-too-many-segments",
        "checkpoint.simulate_goodput(1, 1, 10, 1e30)",
        "ValueError",
        "work / interval = 1e\\+30 checkpoint segments; at most 1e\\+09",
    ),
    raises("checkpoint-sweep-no-work", "checkpoint.sweep(1, 10, 0)", "ValueError", "work must be > 0, got 0"),
    raises(
        "checkpoint-sweep-bad-interval",
        "checkpoint.sweep(1, 10, 100, [5.0, -1.0])",
        "ValueError",
        "intervals\\[1\\] must be > 0, got -1.0",
    ),
    raises(
        "stragglers-base-inf",
        "stragglers.WorkerModel(base_ms=inf)",
        "ValueError",
        "base_ms must be a finite number > 0 and <= 8.64e\\+07, got inf",
    ),
    raises(
        "stragglers-sigma-bool",
        "stragglers.WorkerModel(sigma=True)",
        "TypeError",
        "sigma must be a number >= 0 and <= 10, got bool",
    ),
    raises(
        "stragglers-probability-nan",
        "stragglers.slow_step_probability(4, nan)",
        "ValueError",
        "p must be a finite number, got nan",
    ),
    raises(
        "stragglers-probability-above-one",
        "stragglers.slow_step_probability(4, 1.5)",
        "ValueError",
        "p must be in \\[0, 1\\], got 1.5",
    ),
    raises(
        "stragglers-workers-negative",
        "stragglers.slow_step_probability(-1, 0.1)",
        "ValueError",
        "workers must be >= 0, got -1",
    ),
    raises(
        "stragglers-draws-huge", "stragglers.simulate_steps(10**6, 10**6)", "ValueError", "draws; at most 100,000,000"
    ),
    raises(
        "stragglers-fan-out-empty",
        "stragglers.fan_out(())",
        "ValueError",
        "workers must hold at least one worker count",
    ),
    raises(
        "stragglers-timeout-inf",
        "stragglers.run_sync_steps(2, 2, timeout_s=inf)",
        "ValueError",
        "timeout_s must be a finite number > 0 and <= 86400, got inf",
        isolate=True,
    ),
    raises(
        "stragglers-model-type",
        "stragglers.run_sync_steps(2, 2, 'fast')",
        "TypeError",
        "model must be a WorkerModel, got str",
        isolate=True,
    ),
]

_RUNNER = """
import json, sys
ns = {}
exec(PRELUDE, ns)
try:
    exec(CODE, ns)
    out = {"ok": bool(eval(CHECK, ns)) if CHECK else True}
except BaseException as exc:
    out = {"mro": [c.__name__ for c in type(exc).__mro__], "msg": str(exc)}
print("RESULT " + json.dumps(out), flush=True)
"""


# ---- issue 28: the newer modules (silent wrong numbers, hangs, deep tracebacks) --------------------------------
NEWER_CASES = [
    raises("budget-sample-1e308", "Budget(100, [('a', 10)]).report({'a': [1e308]})", "ValueError", "too large"),
    raises("budget-sample-complex", "Budget(100, [('a', 10)]).report({'a': [1 + 2j]})", "TypeError", "complex"),
    raises("budget-total-huge", "Budget(1e300, [('a', 10)])", "ValueError", "total_us must be <= 1e\\+12 us"),
    raises(
        "readings-threshold-nan",
        "readings.compare('x', ('a', [1, 2]), ('b', [3, 4]), threshold=nan)",
        "ValueError",
        "threshold must be a finite number",
    ),
    raises(
        "readings-compare-bare-lists",
        "readings.compare('x', [1, 2], [3, 4])",
        "TypeError",
        "expected_better must be a \\(name, values\\) pair",
    ),
    raises(
        "readings-guess-measured-nan",
        "readings.check_guess(5, nan, 'x')",
        "ValueError",
        "measured must be a finite number",
    ),
    raises(
        "readings-guess-measured-negative",
        "readings.check_guess(5, -3, 'x')",
        "ValueError",
        "measured must be >= 0, got -3",
    ),
    handled("readings-guess-numpy", "t = readings.check_guess(np.int64(5), np.float32(5), 'x')", "'close' in t"),
    handled("readings-guess-measured-zero", "t = readings.check_guess(5, 0, 'x')", "'zero' in t"),
    handled(
        "readings-guess-extremes",
        "t = readings.check_guess(5e-324, 1e308, 'x')",
        "'inf' not in t and '10^631x higher' in t",
    ),
    raises(
        "troubleshoot-stalls-negative",
        "r = pl.run(pl.best_config(2), ticks=200); troubleshoot.stalls(r, -1)",
        "ValueError",
        "factor must be >= 1",
    ),
    raises(
        "troubleshoot-stalls-nan",
        "r = pl.run(pl.best_config(2), ticks=200); troubleshoot.stalls(r, nan)",
        "ValueError",
        "factor must be a finite number",
    ),
    raises(
        "troubleshoot-checklist-steal-huge",
        "troubleshoot.checklist(steal_sample_s=1e9)",
        "ValueError",
        "steal_sample_s must be <= 60",
        isolate=True,
    ),
    raises("topology-backwards-range", "topology.parse_cpu_list('3-1')", "ValueError", "runs backwards"),
    raises(
        "topology-huge-range", "topology.parse_cpu_list('0-99999999999')", "ValueError", "above 65,535", isolate=True
    ),
    raises("topology-load-huge", "topology.load(1e9)", "ValueError", "sample_s must be <= 60", isolate=True),
    raises(
        "topology-pick-pair-str",
        "topology.pick_pair('01', topology.cpus())",
        "TypeError",
        "usable must be a list of CPU numbers",
    ),
    handled(
        "topology-cpu-max-negative-and-zero-period",
        "import tempfile, pathlib\nd = pathlib.Path(tempfile.mkdtemp()); (d / 'sys/fs/cgroup').mkdir(parents=True)\n"
        "q = []\nfor t in ('-5 100000', '50000 0', '50000 100000'):\n"
        "    (d / 'sys/fs/cgroup/cpu.max').write_text(t); q.append(topology.cpu_quota(d).cpus)",
        "q[0] == inf and q[1] == inf and q[2] == 0.5",
    ),
    raises(
        "orders-sanitize-str",
        "memory_orders.seqlock_demo('correct', sanitize='no')",
        "TypeError",
        "sanitize must be True or False, got str 'no'",
    ),
    handled(
        "toolchain-cc-with-flags",
        "import os\nold = os.environ.get('CC')\nos.environ['CC'] = 'cc -O3'\n"
        "try:\n    cc = toolchain.c_compiler()\nfinally:\n"
        "    os.environ.pop('CC') if old is None else os.environ.__setitem__('CC', old)",
        "cc == 'cc -O3' and toolchain.compiler_words(cc) == ['cc', '-O3']",
    ),
    raises(
        "toolchain-cc-missing",
        "import os\nos.environ['CC'] = 'no-such-compiler-here -O3'\ntoolchain.c_compiler()",
        "RuntimeError",
        "'no-such-compiler-here' is not a program on PATH",
        isolate=True,
    ),
    handled(
        "variant-cache-str-and-cc-true",
        "import tempfile\nv = build_variants.build('o2', cc='/bin/true', cache=tempfile.mkdtemp())",
        "not v and 'wrote no object file' in v.reason",
        isolate=True,
    ),
    raises(
        "variant-compare-name",
        "build_variants.compare('o3-native')",
        "TypeError",
        "other must be a Variant .* use compare\\(build\\('o3-native'\\)\\)",
    ),
    raises(
        "flamegraph-share-bad-regex",
        "flamegraph.share({'a;b': 1}, '[')",
        "ValueError",
        "pattern is not a valid regular expression",
    ),
    raises(
        "profiling-share-bad-regex",
        "profiling.share({'a;b': 1}, '[')",
        "ValueError",
        "pattern is not a valid regular expression",
    ),
    raises(
        "flamegraph-negative-count",
        "flamegraph.flamegraph_svg({'a;b': -3})",
        "ValueError",
        "sample counts must be >= 0, got -3",
    ),
    raises(
        "logring-text-nul",
        "import tempfile\nfrom lowlat.core.logring import AsyncLog\nlg = AsyncLog(tempfile.mktemp())\n"
        "try:\n    lg.log(1, 2, 'a\\0b')\nfinally:\n    lg.close()",
        "ValueError",
        "text must not contain a NUL",
    ),
    raises(
        "overlap-fractions-zero-twice",
        "overlap.run_overlap(fractions=(0.0, -0.0))",
        "ValueError",
        "fractions must be distinct",
    ),
    raises(
        "overlap-predict-huge",
        "overlap.predict_step_ms(1e308, 1e308, 0)",
        "ValueError",
        "compute_ms must be <= 1e\\+12",
    ),
    handled("roofline-matmul-1", "k = roofline.matmul_kernel(1)", "k.seconds > 0", isolate=True),
    raises(
        "roofline-add-repeats-huge",
        "roofline.add_kernel(1, repeats=10**12)",
        "ValueError",
        "repeats must be <= 100",
        isolate=True,
    ),
    raises("loader-sigma-10", "HeavyTailSource(sigma=10)", "ValueError", "sigma must be <= 3"),
    handled(
        "loader-read-capped", "t = HeavyTailSource(n=2000, sigma=3, median_ms=5000).read_times_s()", "t.max() <= 60.0"
    ),
    raises(
        "batching-sweep-total-huge",
        "batching.batch_sweep(total=10**8)",
        "ValueError",
        "calls per round; at most 1,000,000",
        isolate=True,
    ),
    handled(
        "checkpoint-sweep-mtbf-1",
        "s = checkpoint.sweep(1, 1, 1000, runs=50)",
        "np.all(np.isfinite(s.goodput)) and s.best > 0",
        isolate=True,
    ),
    handled(
        "checkpoint-goodput-53tib",
        "g = checkpoint.simulate_goodput(30, 0, 1, 30, runs=1)",
        "g.shape == (1,) and 0 <= g[0] < 1e-9",
        isolate=True,
    ),
    handled(
        "checkpoint-goodput-never", "g = checkpoint.simulate_goodput(1000, 0, 1, 1000)", "np.all(g == 0)", isolate=True
    ),
    handled("precision-one-kernel-rounds", "r = precision.measure(16, 1000, 2, kernels=('copy',))", "r.rounds == 2"),
    raises(
        "precision-kernel-not-measured",
        "precision.measure(16, 1000, 2, kernels=('copy',)).kernel('add', 'float32')",
        "ValueError",
        "kernel 'add' was not measured",
    ),
    handled(
        "loader-epoch-empty",
        "e = loader.train_epoch(HeavyTailSource(n=0), 2, lambda b: None)",
        "e.steps == 0 and all(math.isnan(v) for v in e.percentiles().values())",
    ),
    raises("stragglers-percentile-150", "stragglers.WorkerModel().percentile(150)", "ValueError", "p must be <= 100"),
]
CASES += NEWER_CASES


def _check_error(case: Case, mro: list[str], msg: str) -> None:
    assert case.error in mro, f"{case.id}: expected {case.error}, got {mro[0]}: {msg}"
    assert re.search(case.match, msg), f"{case.id}: message {msg!r} does not match {case.match!r}"
    assert "\n" not in msg.strip() or case.error == "SpscContractError", f"{case.id}: a multi-line message"


def _isolated(case: Case, timeout_s: float = 120) -> dict:
    script = "\n".join(
        [f"PRELUDE = {PRELUDE!r}", f"CODE = {case.code!r}", f"CHECK = {case.match if case.error is None else ''!r}"]
    )
    try:
        res = subprocess.run(
            [sys.executable, "-c", script + _RUNNER],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{case.id}: still running after {timeout_s} s (a hang)")
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")]
    assert res.returncode == 0 and lines, f"{case.id}: the process died (status {res.returncode}): {res.stderr[-2000:]}"
    return json.loads(lines[-1][len("RESULT ") :])


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_api_case(case: Case) -> None:
    if case.isolate:
        out = _isolated(case)
        if case.error is None:
            assert out.get("ok") is True, f"{case.id}: {out}"
        else:
            assert "mro" in out, f"{case.id}: no error was raised ({out})"
            _check_error(case, out["mro"], out["msg"])
        return
    ns: dict = {}
    exec(PRELUDE, ns)
    if case.error is None:
        exec(case.code, ns)
        assert eval(case.match, ns), f"{case.id}: {case.match} is false"
        return
    try:
        exec(case.code, ns)
    except Exception as exc:
        _check_error(case, [c.__name__ for c in type(exc).__mro__], str(exc))
    else:
        pytest.fail(f"{case.id}: no error was raised")


# ---- a sweep: every parameter of the public API against the usual suspects --------------------------------------------
# Each call either completes (a legitimate value) or raises from lowlat's own code with the parameter's
# name in its message: never a traceback from deep inside numpy or the standard library, never a hang
# (a few seconds at most per call).  The explicit table above asserts the exact message of the cases
# the issue named; this sweep keeps the rest of the surface honest.

SUSPECTS = [None, "x", -1, 0, float("nan"), float("inf"), 1.5, True, 10**30, [], (1, 2)]

SWEEP = [
    # (label, the parameter's name as messages say it, a call taking the suspect)
    ("Histogram(lowest)", "lowest", "Histogram(b)"),
    ("Histogram(highest)", "highest", "Histogram(1, b)"),
    ("Histogram(sig_figs)", "sig_figs", "Histogram(1, 1000, b)"),
    ("Histogram.record", "value", "Histogram().record(b)"),
    ("Histogram.record(count)", "count", "Histogram().record(5, b)"),
    ("Histogram.record_corrected", "expected_interval", "Histogram().record_corrected(5, b)"),
    ("Histogram.record_many", "values", "Histogram().record_many(b)"),
    ("Histogram.record_many_corrected", "expected_interval", "Histogram().record_many_corrected([5], b)"),
    ("Histogram.percentile", "percentile", "h1.percentile(b)"),
    ("Histogram.percentiles", "percentile", "h1.percentiles(b)"),
    ("Histogram.merge", "merge", "Histogram().merge(b)"),
    ("Histogram.index_of", "value", "Histogram().index_of(b)"),
    ("Pool(block_size)", "block_size", "Pool(b, 4)"),
    ("Pool(count)", "count", "Pool(8, b)"),
    ("Pool(cache_aligned)", "cache_aligned", "Pool(8, 4, cache_aligned=b)"),
    ("Pool.free", "block", "Pool(8, 2).free(b)"),
    ("Pool.owns", "owns", "Pool(8, 2).owns(b)"),
    ("SpscQueue(capacity)", "capacity", "SpscQueue(b)"),
    ("SpscQueue(dtype)", "record size", "SpscQueue(8, b)"),
    ("SpscQueue(padded)", "padded", "SpscQueue(8, padded=b)"),
    ("SpscQueue.try_push", "uint64", "SpscQueue(8).try_push(b)"),
    ("SpscQueue.push_many", "records", "SpscQueue(8).push_many(b)"),
    ("SpscQueue.pop_many", "out", "SpscQueue(8).pop_many(b)"),
    ("SpscQueue.pop_array", "max_records", "SpscQueue(8).pop_array(b)"),
    ("pipeline ticks", "ticks", "pl.run(pl.best_config(2), ticks=b)"),
    ("pipeline rate", "rate", "pl.run(pl.best_config(2), rate=b)"),
    ("pipeline capacity", "capacity", "pl.run(pl.best_config(2), capacity=b)"),
    ("pipeline pool_blocks", "pool_blocks", "pl.run(pl.best_config(2), pool_blocks=b)"),
    ("pipeline hold_ns", "hold_ns", "pl.run(pl.best_config(2), hold_ns=b)"),
    ("pipeline cpus", "cpu", "pl.run(pl.best_config(2), cpus=b)"),
    ("pipeline work_ns", "work_ns", "pl.run(pl.best_config(2), work_ns=b)"),
    ("pipeline sample_capacity", "sample_capacity", "pl.run(pl.best_config(2), sample_capacity=b)"),
    ("pipeline producer", "producer", "pl.run(pl.best_config(2), producer=b)"),
    ("pipeline config", "config", "pl.run(b)"),
    ("best_config", "ticks", "pl.best_config(b)"),
    ("Budget(total_us)", "total_us", "Budget(b, [('a', 1)])"),
    ("Budget(stages)", "stage", "Budget(100, b)"),
    ("Budget.report(samples)", "samples", "Budget(100, [('a', 10)]).report(b)"),
    ("Budget.report(stage samples)", "stage 'a'", "Budget(100, [('a', 10)]).report({'a': [1.0, b]})"),
    ("Budget.report(percentile)", "percentile", "Budget(100, [('a', 10)]).report({'a': [1]}, b)"),
    ("reallocate(need)", "stage", "reallocate({'a': b}, 10)"),
    ("reallocate(total)", "total_us", "reallocate({'a': 1.0}, b)"),
    ("decide(p50)", "p50_ns", "measure.decide('x', b, 10**9, p50_budget_ns=10, p99_budget_ns=10)"),
    ("decide(budget)", "p99_budget_ns", "measure.decide('x', 1, 2, p50_budget_ns=10, p99_budget_ns=b)"),
    ("gate(candidate)", "candidate", "measure.gate('g', lambda: 1.0, lambda: b)"),
    ("gate(rounds)", "rounds", "measure.gate('g', lambda: 1.0, lambda: 1.0, rounds=b)"),
    ("gate(threshold)", "threshold", "measure.gate('g', lambda: 1.0, lambda: 1.0, threshold=b)"),
    ("repeat_ns", "repeats", "measure.repeat_ns(lambda: None, b)"),
    ("heavy_tailed", "n", "measure.heavy_tailed(b)"),
    ("omission_scenario", "interval_ns", "measure.omission_scenario(interval_ns=b)"),
    ("perf_stat", "cmd", "measure.perf_stat(b)"),
    ("spsc_python_batches(batch)", "batch", "spsc_python_batches(1000, batch=b)"),
    ("young_interval", "cost", "checkpoint.young_interval(b, 10)"),
    ("expected_goodput", "interval", "checkpoint.expected_goodput(b, 1, 10)"),
    ("simulate_goodput(work)", "work", "checkpoint.simulate_goodput(5, 1, 10, b, runs=5)"),
    ("simulate_goodput(runs)", "runs", "checkpoint.simulate_goodput(5, 1, 10, 100, runs=b)"),
    ("checkpoint.sweep(intervals)", "intervals", "checkpoint.sweep(1, 10, 100, b, runs=5)"),
    ("WorkerModel(base_ms)", "base_ms", "stragglers.WorkerModel(base_ms=b)"),
    ("WorkerModel(slow_prob)", "slow_prob", "stragglers.WorkerModel(slow_prob=b)"),
    ("slow_step_probability", "p", "stragglers.slow_step_probability(4, b)"),
    ("simulate_steps", "workers", "stragglers.simulate_steps(b, 10)"),
    ("fan_out", "workers", "stragglers.fan_out(b, 10)"),
    ("HeavyTailSource(n)", "n", "HeavyTailSource(n=b)"),
    ("HeavyTailSource(stall_ms)", "stall_ms", "HeavyTailSource(stall_ms=b)"),
    ("HeavyTailSource[i]", "index", "HeavyTailSource(n=3, median_ms=0)[b]"),
    ("PrefetchLoader(depth)", "depth", "PrefetchLoader(range(3), b)"),
    ("PrefetchLoader.close", "timeout_s", "PrefetchLoader(range(3)).close(b)"),
    ("SimulatedStep", "step_ms", "loader.SimulatedStep(b)"),
    ("depth_sweep", "depth", "loader.depth_sweep(range(3), b, lambda batch: None)"),
    ("compare_row_norms", "rows", "batching.compare_row_norms(b, 8, repeats=1)"),
    ("batch_sweep", "size", "batching.batch_sweep(b, total=100, repeats=1)"),
    ("row_norms_batched", "x", "batching.row_norms_batched(b)"),
    ("matmul_kernel", "n", "roofline.matmul_kernel(b, 1)"),
    ("copy_bandwidth", "nbytes", "roofline.copy_bandwidth(b, 1)"),
    # ---- issue 28's fresh round: the newer modules ----
    ("stage_percentiles(samples)", "samples_ns", "budget.stage_percentiles(b, 50)"),
    ("stage_percentiles(percentile)", "percentile", "budget.stage_percentiles({'a': [1]}, b)"),
    ("attribute(stages)", "stages", "budget.attribute(b, 100)"),
    ("attribute(total)", "total_us", "budget.attribute([('a', 10, 5)], b)"),
    ("Budget.reallocated", "report", "Budget(100, [('a', 10)]).reallocated(b)"),
    ("compare(what)", "what", "readings.compare(b, ('a', [1]), ('b', [2]))"),
    ("compare(expected_better)", "expected_better", "readings.compare('x', b, ('b', [2]))"),
    ("compare(values)", "expected_better", "readings.compare('x', ('a', b), ('b', [2]))"),
    ("compare(other)", "other", "readings.compare('x', ('a', [1]), b)"),
    ("compare(unit)", "unit", "readings.compare('x', ('a', [1]), ('b', [2]), unit=b)"),
    ("compare(lower_is_better)", "lower_is_better", "readings.compare('x', ('a', [1]), ('b', [2]), lower_is_better=b)"),
    ("compare(threshold)", "threshold", "readings.compare('x', ('a', [1]), ('b', [2]), threshold=b)"),
    ("compare(reasons)", "reasons", "readings.compare('x', ('a', [1]), ('b', [2]), reasons=b)"),
    ("check_guess(measured)", "measured", "readings.check_guess(5, b, 'x')"),
    ("check_guess(guess)", "guess", "readings.check_guess(b, 5, 'x')"),
    ("check_guess(what)", "what", "readings.check_guess(5, 5, b)"),
    ("conditions(m)", "m", "readings.conditions(b)"),
    ("conditions(c2c)", "c2c_ns", "readings.conditions(c2c_ns=b)"),
    ("conditions(two_threads)", "two_threads", "readings.conditions(two_threads=b)"),
    ("stalls(result)", "result", "troubleshoot.stalls(b)"),
    ("max_cause", "result", "troubleshoot.max_cause(b)"),
    ("with_usage", "fn", "troubleshoot.with_usage(b)"),
    ("checklist(usage)", "usage", "troubleshoot.checklist(b, steal_sample_s=0)"),
    ("checklist(steal)", "steal_sample_s", "troubleshoot.checklist(steal_sample_s=b)"),
    ("format_checklist", "findings", "troubleshoot.format_checklist(b)"),
    ("parse_cpu_list", "text", "topology.parse_cpu_list(b)"),
    ("cpus(root)", "root", "topology.cpus(b)"),
    ("cpu_quota(root)", "root", "topology.cpu_quota(b)"),
    ("physical_cores", "cpu_list", "topology.physical_cores(b)"),
    ("pick_pair(usable)", "usable", "topology.pick_pair(b, topology.cpus())"),
    ("pick_pair(cpu_list)", "cpu_list", "topology.pick_pair([0, 1], b)"),
    ("placement_pairs", "usable", "topology.placement_pairs(b, topology.cpus())"),
    ("topology.table(limit)", "limit", "topology.table(topology.cpus(), [0], limit=b)"),
    ("topology.table(roles)", "roles", "topology.table(topology.cpus(), [0], roles=b)"),
    ("numa_nodes", "cpu_list", "topology.numa_nodes(b)"),
    ("numa_node_from_maps", "addr", "topology.numa_node_from_maps(b)"),
    ("topology.load", "sample_s", "topology.load(b)"),
    ("store_ns(order)", "order", "memory_orders.store_ns(b, 10)"),
    ("store_ns(iterations)", "iterations", "memory_orders.store_ns('relaxed', b)"),
    ("orders.measure(rounds)", "rounds", "memory_orders.measure(b, 10)"),
    ("orders.assembly", "target", "memory_orders.assembly(b)"),
    ("seqlock_demo(mode)", "mode", "memory_orders.seqlock_demo(b, sanitize=False, snapshots=10)"),
    ("seqlock_demo(sanitize)", "sanitize", "memory_orders.seqlock_demo('correct', sanitize=b, snapshots=10)"),
    ("seqlock_demo(snapshots)", "snapshots", "memory_orders.seqlock_demo('correct', sanitize=False, snapshots=b)"),
    (
        "seqlock_demo(timeout)",
        "timeout_s",
        "memory_orders.seqlock_demo('correct', sanitize=False, snapshots=10, timeout_s=b)",
    ),
    ("orders.bench_keys", "quick", "memory_orders.bench_keys(b)"),
    ("compiler_words", "cc", "toolchain.compiler_words(b)"),
    ("variant.build(name)", "variant", "build_variants.build(b)"),
    ("variant.build(cc)", "cc", "build_variants.build('o2', cc=b)"),
    ("variant.build(cache)", "cache", "build_variants.build('o2', cache=b)"),
    ("variant.compare", "other", "build_variants.compare(b)"),
    ("variant.bench_keys", "quick", "build_variants.bench_keys(b)"),
    ("vector_registers", "path", "build_variants.vector_registers(b)"),
    ("share(folded)", "folded", "flamegraph.share(b, 'a')"),
    ("share(pattern)", "pattern", "flamegraph.share({'a;b': 1}, b)"),
    ("leaves(n)", "n", "flamegraph.leaves({'a;b': 1}, b)"),
    ("by_thread", "folded", "flamegraph.by_thread(b)"),
    ("only(pattern)", "thread_pattern", "flamegraph.only({'a;b': 1}, b)"),
    ("parse_folded", "text", "flamegraph.parse_folded(b)"),
    ("collapse_perf_script", "text", "flamegraph.collapse_perf_script(b)"),
    ("child_result", "output", "flamegraph.child_result(b)"),
    ("flamegraph_svg(folded)", "folded", "flamegraph.flamegraph_svg(b)"),
    ("flamegraph_svg(width)", "width", "flamegraph.flamegraph_svg({'a;b': 1}, width=b)"),
    ("flamegraph_svg(row)", "row", "flamegraph.flamegraph_svg({'a;b': 1}, row=b)"),
    ("flamegraph_svg(min_px)", "min_px", "flamegraph.flamegraph_svg({'a;b': 1}, min_px=b)"),
    ("flamegraph_svg(highlight)", "highlight", "flamegraph.flamegraph_svg({'a;b': 1}, highlight=b)"),
    ("flamegraph_svg(title)", "title", "flamegraph.flamegraph_svg({'a;b': 1}, b)"),
    ("profiling.record(cmd)", "cmd", "profiling.record(b)"),
    ("profiling.record(timeout)", "timeout_s", "profiling.record(['true'], tool='py-spy', timeout_s=b)"),
    ("profiling.record(tool)", "tool", "profiling.record(['true'], tool=b)"),
    ("profiling.record(frequency)", "frequency", "profiling.record(['true'], frequency=b)"),
    ("profiling.sched(timeout)", "timeout_s", "profiling.sched(['true'], timeout_s=b)"),
    ("parse_timehist(pid)", "pid", "profiling.parse_timehist('', b)"),
    ("python_child", "code", "profiling.python_child(b)"),
    ("gates.decide(case)", "case", "gates.decide(b, 1, 2, p50_budget_ns=10, p99_budget_ns=10)"),
    ("gates.noise_gate(margin)", "margin", "gates.noise_gate('g', lambda: {'p': 1.0}, lambda: {'p': 1.0}, margin=b)"),
    ("latency_percentiles(samples)", "samples_ns", "gates.latency_percentiles(b)"),
    ("latency_percentiles(percentiles)", "percentile", "gates.latency_percentiles([1, 2], b)"),
    ("perf_stat(events)", "events", "measure.perf_stat(['true'], b)"),
    ("cachegrind(geometry)", "geometry", "measure.cachegrind_demo(1, geometry=b)"),
    ("predict_step_ms", "compute_ms", "overlap.predict_step_ms(b, 1, 0.5)"),
    ("predict_step_ms(fraction)", "fraction", "overlap.predict_step_ms(1, 1, b)"),
    ("schedule_step_ms", "comm_ms", "overlap.schedule_step_ms(1, b, 0.5)"),
    ("overlapped_buckets", "buckets", "overlap.overlapped_buckets(0.5, b)"),
    ("run_overlap(mode)", "mode", "overlap.run_overlap(b, rounds=1, compute_ms=1, comm_ms=1, fractions=(0.0,))"),
    ("run_overlap(fractions)", "fraction", "overlap.run_overlap(rounds=1, compute_ms=1, comm_ms=1, fractions=b)"),
    ("run_overlap(cpu)", "cpu", "overlap.run_overlap(rounds=1, compute_ms=1, comm_ms=1, fractions=(0.0,), cpu=b)"),
    ("add_kernel(n)", "n", "roofline.add_kernel(b, 1)"),
    ("add_kernel(repeats)", "repeats", "roofline.add_kernel(8, b)"),
    ("matmul_kernel(repeats)", "repeats", "roofline.matmul_kernel(2, b)"),
    ("sum_kernel", "n", "roofline.sum_kernel(b, 1)"),
    ("stream_kernels", "nbytes", "roofline.stream_kernels(b, 1)"),
    ("out_vs_temporaries(repeats)", "repeats", "roofline.out_vs_temporaries(8, b)"),
    ("precision.measure(kernels)", "kernels", "precision.measure(8, 100, 1, kernels=b)"),
    ("precision.measure(rounds)", "rounds", "precision.measure(8, 100, b)"),
    ("kernel_flops", "n", "precision.kernel_flops('add', b)"),
    ("numeric_check", "n_matmul", "precision.numeric_check(b, 10)"),
    ("ffi_costs(n)", "n", "batching.ffi_costs(b, 1)"),
    ("ffi_costs(repeats)", "repeats", "batching.ffi_costs(10, b)"),
    ("batch_sweep(total)", "total", "batching.batch_sweep((1, 4), total=b, repeats=1)"),
    ("batch_sweep(repeats)", "repeats", "batching.batch_sweep((1, 4), total=100, repeats=b)"),
    ("compare_row_norms(repeats)", "repeats", "batching.compare_row_norms(4, 4, repeats=b)"),
    ("checkpoint.sweep(runs)", "runs", "checkpoint.sweep(1, 10, 100, runs=b)"),
    ("checkpoint.sweep(restart)", "restart", "checkpoint.sweep(1, 10, 100, restart=b, runs=5)"),
    ("simulate_goodput(mtbf)", "mtbf", "checkpoint.simulate_goodput(5, 1, b, 100, runs=5)"),
    ("daly_interval", "cost", "checkpoint.daly_interval(b, 10)"),
    ("WorkerModel.percentile(p)", "p", "stragglers.WorkerModel().percentile(b, n=100)"),
    ("WorkerModel.percentile(n)", "n", "stragglers.WorkerModel().percentile(50, n=b)"),
    ("simulate_steps(steps)", "steps", "stragglers.simulate_steps(2, b)"),
    ("HeavyTailSource(sigma)", "sigma", "HeavyTailSource(sigma=b)"),
    ("HeavyTailSource(median_ms)", "median_ms", "HeavyTailSource(median_ms=b)"),
    ("train_epoch(depth)", "depth", "loader.train_epoch(HeavyTailSource(n=2, median_ms=0), b, lambda x: None)"),
    ("train_epoch(step)", "step", "loader.train_epoch(HeavyTailSource(n=2, median_ms=0), 1, b)"),
    ("depth_against_estimate(found)", "found", "loader.depth_against_estimate([1, 2, 4], b, 2.0)"),
    ("depth_against_estimate(estimate)", "estimate", "loader.depth_against_estimate([1, 2, 4], 2, b)"),
    ("depth_against_estimate(depths)", "depth", "loader.depth_against_estimate(b, 2, 2.0)"),
]


@pytest.mark.parametrize("label, name, call", SWEEP, ids=[s[0] for s in SWEEP])
def test_sweep(label: str, name: str, call: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import signal
    import traceback

    monkeypatch.chdir(tmp_path)  # a suspect that is a valid relative path ("x") writes there, not in the tree

    ns: dict = {}
    exec(PRELUDE + "h1 = Histogram(); h1.record(5)\n", ns)

    def too_long(signum: int, frame: object) -> None:
        raise TimeoutError(f"{label}: still running after 10 s")

    old = signal.signal(signal.SIGALRM, too_long)
    problems = []
    try:
        for b in SUSPECTS:
            ns["b"] = b
            signal.alarm(10)
            try:
                eval(call, ns)
            except TimeoutError as exc:
                problems.append(f"{b!r}: {exc}")
            except Exception as exc:
                where = traceback.extract_tb(exc.__traceback__)[-1].filename
                msg = str(exc)
                if "lowlat" not in Path(where).parts:
                    problems.append(f"{b!r}: {type(exc).__name__} from {where}: {msg}")
                elif name.lower() not in msg.lower():
                    problems.append(f"{b!r}: {type(exc).__name__} does not name {name!r}: {msg}")
            finally:
                signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, old)
    assert not problems, "\n".join(problems)


# ---- the command lines ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("bad-input")
    (d / "latin1.c").write_bytes(b"/* caf\xe9 */\n#error stop \xff here\n")
    (d / "empty.xml").write_text("")
    (d / "broken.xml").write_text("<testsuites><testsuite>")
    (d / "nocases.xml").write_text('<testsuites><testsuite name="pytest"></testsuite></testsuites>')
    one = '<testsuites><testsuite><testcase classname="exercises.03_spsc.mpmc.mpmc.ipynb" name="Cell 0"/></testsuite></testsuites>'
    for sub in ("a", "b"):
        (d / sub).mkdir()
        (d / sub / "alice.xml").write_text(one)
    (d / "bob.xml").write_text(one)
    (d / "notjson.ipynb").write_text("{not json")
    (d / "exists").mkdir()
    (d / "readonly").mkdir()
    return d


# (module, arguments; {d} is the folder of bad files, message regex).  Read-only places: /sys and
# /proc refuse writes even to root, where a chmod-ed folder would not.
CLI_CASES = [
    ("lowlat", [], "python -m lowlat: the following arguments are required: cmd \\(see python -m lowlat --help\\)"),
    ("lowlat", ["frobnicate"], "argument cmd: invalid choice: 'frobnicate'"),
    ("lowlat", ["bench", "--jsn", "x"], "unrecognized arguments: --jsn x"),
    ("lowlat", ["bench", "--json", ""], "python -m lowlat bench: --json needs a file name, got an empty one"),
    ("lowlat", ["bench", "--json", "{d}"], "--json .* is a folder; give a file name in it"),
    (
        "lowlat",
        ["bench", "--json", "{d}/missing/out.json"],
        "the folder .*missing does not exist \\(create it first\\)",
    ),
    ("lowlat", ["bench", "--json", "/sys/lowlat-bench.json"], "--json /sys/lowlat-bench.json: cannot write there"),
    ("lowlat", ["bench", "--json", "/proc/version"], "--json /proc/version: cannot write there"),
    ("lowlat", ["grade", "nope", "x.c"], "unknown exercise 'nope'; known: "),
    ("lowlat", ["grade", "mpmc", "{d}/missing.c"], "missing.c: no such file"),
    ("lowlat", ["grade", "mpmc", "{d}"], "no such file \\(it is a folder\\)"),
    (
        "lowlat",
        ["grade", "mpmc", "{d}/latin1.c"],
        "latin1.c holds text that is not UTF-8 \\(byte 0xe9 at line 1, column 7\\)",
    ),
    ("lowlat", ["release", "--force"], "is an author/instructor command"),
    ("tools", [], "python -m tools: the following arguments are required: cmd"),
    ("tools", ["frob"], "argument cmd: invalid choice: 'frob'"),
    ("tools", ["class-report", "{d}/missing.xml"], "missing.xml: no such report"),
    ("tools", ["class-report", "{d}/empty.xml"], "empty.xml: not a JUnit XML report \\(the file is empty\\)"),
    ("tools", ["class-report", "{d}/broken.xml"], "broken.xml: not a JUnit XML report \\(no element found"),
    ("tools", ["class-report", "{d}/nocases.xml"], "none of the 1 report\\(s\\) holds an exercise case"),
    ("tools", ["class-report", "{d}/a/alice.xml", "{d}/b/alice.xml"], "two reports are named 'alice' .* rename one"),
    ("tools", ["class-report", "{d}"], "no such report \\(it is a folder\\)"),
    ("tools", ["notebooks", "{d}/missing.ipynb"], "missing.ipynb: no such notebook"),
    ("tools", ["notebooks", "{d}/notjson.ipynb"], "notjson.ipynb: not a notebook \\(a .ipynb file is JSON"),
    ("tools", ["release", "{d}/exists"], "exists exists; give a new folder for the release"),
    (
        "tools",
        ["release", "{d}/missing/student"],
        "cannot create the release folder .* is not a folder \\(create it first\\)",
    ),
    ("tools", ["release", "/sys/lowlat-release"], "cannot create the release folder /sys/lowlat-release"),
]


@pytest.mark.parametrize(
    "module, args, match", CLI_CASES, ids=[f"{m}-{'-'.join(a) or 'nothing'}"[:60] for m, a, _ in CLI_CASES]
)
def test_cli_case(files: Path, module: str, args: list[str], match: str) -> None:
    if module == "tools" and not HAS_TOOLS:
        pytest.skip("no tools/ here (a student release)")
    argv = [a.replace("{d}", str(files)) for a in args]
    res = subprocess.run([sys.executable, "-m", module, *argv], capture_output=True, text=True, timeout=120, cwd=ROOT)
    err = res.stderr.strip()
    assert res.returncode == 2, f"exit {res.returncode}; stderr: {res.stderr}"
    assert "Traceback" not in res.stderr and len(err.splitlines()) == 1, f"not one line: {res.stderr}"
    assert re.search(match, err), f"{err!r} does not match {match!r}"
    assert "lowlat bench on" not in res.stdout, "the bench started before its argument was checked"


def test_cli_debug_shows_the_traceback(files: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "lowlat", "--debug", "bench", "--json", ""],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert res.returncode != 0 and "Traceback" in res.stderr and "--json needs a file name" in res.stderr


@pytest.mark.skipif(not HAS_TOOLS, reason="no tools/ here (a student release)")
def test_class_report_warns_about_a_report_without_cases(files: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "tools", "class-report", str(files / "bob.xml"), str(files / "nocases.xml")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert res.returncode == 0, res.stderr
    assert "bob" in res.stdout and re.search(r"nocases\s+-\s+0/1", res.stdout), res.stdout
    assert "warning: " in res.stderr and "no exercise case in this report" in res.stderr


def test_case_ids_are_unique() -> None:
    assert len({c.id for c in CASES}) == len(CASES)


if __name__ == "__main__":  # python tests/test_bad_input.py: the table's size
    print(
        f"API cases: {len(CASES)} ({sum(c.isolate for c in CASES)} in their own process); "
        f"sweep: {len(SWEEP)} parameters x {len(SUSPECTS)} suspects = {len(SWEEP) * len(SUSPECTS)} calls; "
        f"CLI cases: {len(CLI_CASES)}"
    )
