"""Tests of data-parallel training (autograder.reference.training.distributed) on the CPU with gloo."""

import os
import subprocess
import sys

import torch

from autograder import cli
from autograder.reference.training import distributed

# The reverse task has targets of many lengths, and a batch of 15 splits into 8 + 7 pairs: the two
# halves hold different numbers of target tokens, which is where a wrong loss average shows.
ARGS = [
    "train",
    "--task",
    "reverse",
    "--num-train",
    "300",
    "--num-valid",
    "20",
    "--num-test",
    "20",
    "--batch-size",
    "15",
    "--steps",
    "12",
    "--d-model",
    "16",
    "--num-heads",
    "2",
    "--num-layers",
    "1",
    "--d-ff",
    "32",
    "--warmup",
    "4",
    "--dropout",
    "0",
    "--eval-every",
    "0",
    "--no-progress",
    "--device",
    "cpu",
]


def test_alone_everything_is_a_no_op():
    """Run without torchrun, is the world one process of rank 0 whose shard is the whole batch?"""
    assert not distributed.active() and distributed.world_size() == 1 and distributed.is_main()
    batch = torch.arange(12).view(6, 2)
    assert distributed.shard(batch) is batch or torch.equal(distributed.shard(batch), batch)
    assert distributed.all_sum(3) == 3.0 and distributed.gather("x") == ["x"]


def test_two_processes_equal_one(tmp_path, capsys):
    """Do two gloo processes under torchrun, each on its share of a batch of 15, end with the parameters
    of one process on the whole batch (float tolerance), with only rank 0 printing and writing?"""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            "-m",
            "autograder",
            *ARGS,
            "--out",
            str(tmp_path / "two.pt"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert run.stdout.count("held-out test exact match") == 1, run.stdout
    assert "batch 15 over 2 process(es)" in run.stdout
    assert cli.main([*ARGS, "--out", str(tmp_path / "one.pt")]) == 0
    two, one = torch.load(tmp_path / "two.pt"), torch.load(tmp_path / "one.pt")
    assert len(two["rng"]) == 2 and len(one["rng"]) == 1 and two["step"] == one["step"] == 12
    torch.testing.assert_close(torch.tensor(two["history"]), torch.tensor(one["history"]), rtol=0, atol=1e-5)
    for name, p in one["model"].items():
        if name.endswith("k_proj.bias"):
            # A key bias adds the same q.b to every score of a query, which softmax ignores: its
            # true gradient is 0 and the computed one is rounding noise that Adam scales up to
            # full steps, different in each run. It changes no output, so it is left out.
            continue
        torch.testing.assert_close(two["model"][name], p, rtol=0, atol=1e-5, msg=lambda m: f"{name}: {m}")
