"""The source of the sample lab ``solutions/00-warmup``: the pattern every chapter lab copies.

Run ``python -m autograder.sample_lab`` to rewrite the source notebook, then
``python -m autograder release 00-warmup``. The builder lives in the package, not beside
the notebook, because nbgrader copies every other file of ``solutions/<lab>/`` into the
released ``notebooks/<lab>/``.
"""

from __future__ import annotations

from pathlib import Path

from nbformat import NotebookNode

from autograder.authoring import code, lab, md, save, solution, tests
from autograder.grading.layout import CourseLayout

NAME = "00-warmup"

INTRO = """
# Lab 0: Warm-up (5 points)

This lab shows how every lab of the course works, on two functions you may already know.

**Recap.** A graded exercise is a function you write in the cell that raises
`NotImplementedError`. The cell after it calls a *check*, which compares your function
with the course's reference on fixed inputs and tells you what it got wrong. The grader
runs more inputs (hidden tests) than the ones you see, so write the general function
rather than one that fits the visible case.

**Goals.**
1. Write `relu`, the activation of the position-wise feed-forward network (chapter 7).
2. Write `mean_squared_error`, a loss that reduces every element to one number.

| exercise | points |
| --- | --- |
| 1. `relu` | 2 |
| 2. `mean_squared_error` | 3 |
| **total** | **5 points** |
"""

SETUP = """
import os

import torch

torch.manual_seed(0)
"""

RELU_TEXT = """
## Exercise 1: `relu` (2 points)

$\\mathrm{relu}(x) = \\max(x, 0)$, element by element. Build it from `torch.where` or a
comparison; `torch.relu`, `torch.clamp` and `F.relu` are what you are rebuilding, so the
check blocks them. Do not change `x` in place.
"""

RELU = '''
def relu(x: torch.Tensor) -> torch.Tensor:
    """The rectified linear unit, element by element.

    Args:
        x: a tensor of any shape and floating dtype.

    Shape:
        x: (*), returns: (*), the same shape and dtype.

    Returns:
        A new tensor with the negative entries of ``x`` replaced by zeros.
    """
    ### BEGIN SOLUTION
    return torch.where(x > 0, x, torch.zeros((), dtype=x.dtype, device=x.device))
    ### END SOLUTION
'''

MSE_TEXT = """
## Exercise 2: `mean_squared_error` (3 points)

$\\mathrm{MSE}(\\hat y, y) = \\frac{1}{N}\\sum_i (\\hat y_i - y_i)^2$ over **every** element,
returned as a 0-dimensional tensor. `F.mse_loss` is blocked.
"""

MSE = '''
def mean_squared_error(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The mean of the squared differences over every element.

    Args:
        pred: predictions.
        target: targets, the same shape as ``pred``.

    Shape:
        pred, target: (*), returns: () (a 0-dimensional tensor of the inputs' dtype).
    """
    ### BEGIN SOLUTION
    return ((pred - target) ** 2).mean()
    ### END SOLUTION
'''

PLOT_TEXT = """
## Look at your functions

The plot below uses your `relu`; copy it into a new cell to try other inputs (this cell is not graded).
"""

PLOT = """
import matplotlib.pyplot as plt

xs = torch.linspace(-3, 3, 61)
try:
    with plt.style.context("tableau-colorblind10"):  # colours told apart with any colour vision
        fig, ax = plt.subplots(figsize=(4, 2.5))
        ax.plot(xs, relu(xs), label="your relu")
        ax.set_xlabel("x")
        ax.legend()
        plt.show()
except NotImplementedError:
    print("Write relu first.")
"""


def exercise(text_id: str, text: str, name: str, answer: str, points: int) -> list[NotebookNode]:
    """An exercise's three cells: its text, the answer cell, and the test cell calling ``check_<name>``
    on the visible case and, hidden, on three more seeds."""
    check = f"check_{name}"
    return [
        md(text_id, text),
        solution(name, answer),
        tests(
            f"test_{name}",
            points,
            imports=f"from autograder.checks import {check}",
            visible=f"{check}({name})",
            hidden=f"for seed in (1, 2, 3):\n    {check}({name}, seed=seed)",
        ),
    ]


def build() -> NotebookNode:
    """The warm-up lab as a notebook (with solutions and hidden tests)."""
    return lab(
        NAME,
        [
            md("intro", INTRO),
            code("setup", SETUP),
            *exercise("relu_text", RELU_TEXT, "relu", RELU, 2),
            *exercise("mse_text", MSE_TEXT, "mean_squared_error", MSE, 3),
            md("plot_text", PLOT_TEXT),
            code("plot", PLOT),
        ],
    )


def main(root: str | Path = ".") -> Path:
    path = CourseLayout(Path(root)).source(NAME)
    save(build(), path)
    return path


if __name__ == "__main__":
    print(main())
