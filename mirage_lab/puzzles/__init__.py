"""Puzzles the verifier grades (issue 39): build a μGraph equal to a program, with goals, witnesses and hints.

    import mirage_lab as ml
    ml.puzzles.names()                       # easiest first
    p = ml.puzzles.get("row_sums"); print(p)  # the statement, inputs and goals; p.program is the program
    r = ml.puzzles.check("row_sums", g)      # g: a kernel graph, a builder, or a function building one
    r.passed, r.explanation, r.witness, r.hint(1)

Reference solutions, for teachers: ``ml.puzzles.solution(name)``.
"""

from mirage_lab.puzzles.catalog import PUZZLES, Puzzle, get, hint, names
from mirage_lab.puzzles.check import CheckResult, check
from mirage_lab.puzzles.goals import Goal
from mirage_lab.puzzles.solutions import solution
from mirage_lab.puzzles.witness import Witness

__all__ = ["PUZZLES", "CheckResult", "Goal", "Puzzle", "Witness", "check", "get", "hint", "names", "solution"]
