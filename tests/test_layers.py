"""No import circle in ``lowlat``, function-level imports included: grimp
(it comes with import-linter) sees every import statement, wherever it is,
and the graph of modules must be acyclic.  The layer contract itself is
import-linter's (``lint-imports``, pyproject.toml)."""

from __future__ import annotations

import pytest

grimp = pytest.importorskip("grimp", reason="grimp (the test extra, with import-linter) finds import circles")


def find_cycle(modules: set[str], imports_of: dict[str, set[str]]) -> list[str] | None:
    """One import circle among ``modules`` as the list of modules along it
    (the first repeated at the end), or None: an iterative depth-first
    search that needs no graph library."""
    state = dict.fromkeys(modules, 0)  # 0 unseen, 1 on the current path, 2 done
    for root in sorted(modules):
        if state[root]:
            continue
        path = [root]
        stack = [iter(sorted(imports_of[root]))]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state[nxt] == 1:
                return [*path[path.index(nxt) :], nxt]
            elif state[nxt] == 0:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(imports_of[nxt])))
    return None


def test_find_cycle_finds_a_circle_and_only_one() -> None:
    assert find_cycle({"a", "b", "c"}, {"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a", "b", "c"}, {"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a"}, {"a": {"a"}}) == ["a", "a"]


def _imports() -> tuple[set[str], dict[str, set[str]]]:
    """Every module of lowlat and the lowlat modules each imports directly
    (top-level and function-level imports alike)."""
    g = grimp.build_graph("lowlat", include_external_packages=False, cache_dir=None)  # no .grimp_cache in the tree
    modules = set(g.modules)
    return modules, {m: {i for i in g.find_modules_directly_imported_by(m) if i in modules} for m in modules}


def test_lowlat_has_no_import_circle() -> None:
    modules, imports_of = _imports()
    cycle = find_cycle(modules, imports_of)
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])
