"""Repository-wide pytest set-up for notebooks run with --nbval.

stderr is never compared: library warnings and kernel chatter would make the
grading flaky, and nothing the course checks is written there."""


def pytest_collectstart(collector):
    if str(getattr(collector, "fspath", "")).endswith(".ipynb") and hasattr(collector, "skip_compare"):
        collector.skip_compare = tuple(collector.skip_compare) + ("stderr",)
