"""Does the answer a lab's question intends follow from what the lab itself computes, at the lab's
seed and at two other seeds? Each test runs the lab's own cells from its solution notebook."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib
import pytest

REPO = Path(__file__).resolve().parents[2]


def _run_cells(lab: str, cell_ids: list[str], replace: dict[str, str] | None = None) -> dict:
    """Execute the named cells of a solution lab, in order, in one namespace (with `old -> new`
    replacements in their source), and return the namespace."""
    cells = {
        c.get("id"): "".join(c["source"])
        for c in json.loads((REPO / "solutions" / lab / f"{lab}.ipynb").read_text())["cells"]
    }
    namespace: dict = {"__name__": "__lab__"}
    for cell_id in cell_ids:
        source = cells[cell_id]
        for old, new in (replace or {}).items():
            source = source.replace(old, new)
        exec(compile(source, f"{lab}:{cell_id}", "exec"), namespace)
    return namespace


@pytest.fixture
def headless_plots(monkeypatch):
    """Draw on an off-screen canvas and keep the figures, so a test can read what was plotted."""
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setattr(plt, "show", lambda *args, **kwargs: None)
    yield plt
    plt.close("all")


def test_lab7_prenorm_gives_the_bottom_layer_at_least_the_top_layers_gradient_at_every_seed(monkeypatch):
    """Lab 7 asks which placement gives the layer nearest the input a gradient at least as large as
    the top layer's at every seed, what the other does from seed to seed, and which pre-norm layers
    get the smallest gradient. With the lab's own measurement at seeds 0, 1, 2: pre-norm at every
    seed, its smallest at the top layer; post-norm at some seeds and not at others."""
    monkeypatch.setenv("NBGRADER_EXECUTION", "test")  # define the measurement, skip the plot
    lab = _run_cells("07-transformer-block", ["setup", "positionwise-feed-forward", "encoder-layer", "depth-plot"])
    measure = lab["input_gradient_norms"]
    post_holds = []
    for seed in (0, 1, 2):
        pre = measure(True, seed=seed)
        assert pre[0] >= pre[-1], f"pre-norm, seed {seed}: layer 0 {pre[0]:.4f} < top {pre[-1]:.4f}"
        assert min(range(len(pre)), key=pre.__getitem__) == len(pre) - 1, f"pre-norm, seed {seed}: {pre}"
        post = measure(False, seed=seed)
        post_holds.append(post[0] >= post[-1])
    assert True in post_holds and False in post_holds, f"post-norm, layer 0 >= top at seeds 0, 1, 2: {post_holds}"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_lab3_relative_error_falls_below_five_percent_at_rank_14(seed, monkeypatch, headless_plots):
    """Lab 3 asks, on the right-hand plot, what rank keeps the error below 5% of ||W||_F. Is the
    plotted error relative (1 at rank 0), and is the answer rank 14 at the lab's seed (1) and two others?"""
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    lab = _run_cells(
        "03-qk-low-rank",
        ["setup", "low-rank-factorize", "low-rank-error", "plot"],
        replace={"manual_seed(1)": f"manual_seed({seed})"},
    )
    right = lab["axes"][1]
    for line in right.lines[:3]:  # singular values, the student's factors, random directions
        assert line.get_ydata()[0] == pytest.approx(1.0, abs=1e-5)
    svd_error = list(right.lines[0].get_ydata())
    assert min(k for k, error in enumerate(svd_error) if error < 0.05) == 14
    assert all(error < 0.05 for error in svd_error[14:])
