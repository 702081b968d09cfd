"""What grading a file produces: one :class:`CheckResult` per check, the
:class:`Report` of a whole file (its lines, its verdict), and
:class:`GradeFailed`, which a grading notebook raises when a check failed."""

from __future__ import annotations

from dataclasses import dataclass, field

from lowlat.grading.spec import Check


@dataclass
class CheckResult:
    check: Check
    passed: bool
    reason: str = ""

    def line(self) -> str:
        if self.passed:  # a pass's reason is a note on how it was judged
            return f"PASS: {self.check.text}" + (f" ({self.reason})" if self.reason else "")
        return f"FAIL: {self.check.text}: {self.reason}"


@dataclass
class Report:
    exercise: str
    results: list[CheckResult] = field(default_factory=list)
    compiler_output: str = ""
    refused: str = ""  # why the grader refused to run the file at all
    timing: dict[str, float] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)  # ids of checks not run (grade(only=...)): not a grade

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def all_run_passed(self) -> bool:
        """Every check that ran passed (with checks left out: not a grade)."""
        return bool(self.results) and self.passed == len(self.results)

    @property
    def ok(self) -> bool:
        return self.all_run_passed and not self.left_out

    def verdict(self) -> str:
        if self.left_out:
            return (
                f"{self.exercise}: {self.passed}/{len(self.results)} chosen checks passed; "
                f"not a grade: {len(self.left_out)} checks left out ({', '.join(self.left_out)})"
            )
        return f"{self.exercise}: {self.passed}/{len(self.results)} checks passed"

    def lines(self) -> list[str]:
        out = []
        if self.compiler_output:
            out += ["The compiler says:", *("  " + ln for ln in self.compiler_output.rstrip().splitlines()), ""]
        if self.refused:
            out += ["The grader refuses to run this file:", "  " + self.refused, ""]
        return out + [r.line() for r in self.results] + [self.verdict()]

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def print(self) -> None:
        print(str(self))

    def require(self) -> Report:
        """Prints the lines, then raises :class:`GradeFailed` unless every
        check passed.  Grading notebooks end with this call: the grade is
        decided by whether the cell raises, never by the output a notebook
        has stored (a saved notebook cannot change it)."""
        self.print()
        if not self.ok:
            first = next((r for r in self.results if not r.passed), None)
            why = f"; first failing check: {first.line()}" if first else ""
            raise GradeFailed(f"{self.verdict()}{why}")
        return self


class GradeFailed(AssertionError):
    """A graded file did not pass every check (the message is the verdict)."""

    def _render_traceback_(self) -> list[str]:
        # IPython shows this instead of a coloured traceback through the
        # grader's own frames: in JupyterLab and in nbval's failure text the
        # learner reads the verdict, plainly, and nothing else.
        return [f"GradeFailed: {self}"]
