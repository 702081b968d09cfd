"""Build variants (lowlat.experiments.build_variants): the core built with other flags into a
cache, loaded beside the installed core with the same declarations, the same
benchmark run from both; an unavailable variant comes back with a reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from lowlat.core import toolchain
from lowlat.experiments import build_variants as variant

needs_cc = pytest.mark.skipif(toolchain.c_compiler() is None, reason="needs a C compiler")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[variant.Variant, Path]:
    cache = tmp_path_factory.mktemp("variants")
    v = variant.build("o3-native", cache=cache)
    if not v:
        pytest.skip(f"o3-native cannot be built here: {v.reason}")
    return v, cache


def test_unknown_variant_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="o3-native"):
        variant.build("o9")


def test_missing_compiler_gives_a_reason(tmp_path: Path) -> None:
    v = variant.build("o2", cc=str(tmp_path / "no-such-cc"), cache=tmp_path)
    assert not v and v.lib is None and "no-such-cc" in v.reason


@needs_cc
def test_unsupported_flag_gives_the_compilers_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(variant.VARIANTS, "bogus", ("-O2", "-mno-such-flag-anywhere"))
    v = variant.build("bogus", cache=tmp_path)
    assert not v and "could not build" in v.reason and "no-such-flag" in v.reason
    assert not any(tmp_path.iterdir()), "a failed build leaves nothing in the cache"


@needs_cc
@pytest.mark.slow
def test_variant_is_cached_and_runs_the_same_benchmark(built: tuple[variant.Variant, Path]) -> None:
    v, cache = built
    assert v.path is not None and v.path.parent.parent == cache and not v.cached
    again = variant.build("o3-native", cache=cache)
    assert again.cached and again.path == v.path
    base = variant.installed()
    assert base and base.flags == ("-O2",)
    for build in (base, v):  # the same function, from both builds: every record in order (else it raises)
        assert build.spsc_throughput(1024, 200_000, batch=256) > 0
        assert build.spsc_throughput(1024, 50_000) > 0
    assert v.lib.LL_CACHELINE == base.lib.LL_CACHELINE


@needs_cc
@pytest.mark.slow
def test_compare_interleaves_both_builds(built: tuple[variant.Variant, Path]) -> None:
    v, _ = built
    r = variant.compare(v, 2, batch_items=100_000, item_items=20_000)
    assert set(r) == {"installed, batch", "o3-native, batch", "installed, per item", "o3-native, per item"}
    assert all(len(x) == 2 and min(x) > 0 for x in r.values())


def test_cpu_features_are_booleans() -> None:
    feats = variant.cpu_features()
    assert all(isinstance(k, str) and isinstance(b, bool) for k, b in feats.items())
