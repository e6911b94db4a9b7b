"""Tests of the captured training step: ``--compile`` and ``--cuda-graph`` (issue 24, item 4).

On the CPU: the compiled model (backend ``aot_eager``: traced, no code generated), every other
plan of ``captured.COMPILE_PLANS`` (the forward pass with the loss compiled, Adam's fused kernel,
PyTorch's fused attention) and the body of the CUDA graph run eagerly (padding to buckets, Adam
with a tensor learning rate filled from chapter 8's scheduler) give the losses of chapter 8's eager ``train_step``.
TOLERANCE: within 1e-5 over 8 steps; measured 2.4e-7 for each of them, and for every plan under
inductor too (torch 2.13, CPU, float32): float rounding from another order of operations (padding
lengthens the reductions). Inductor (it generates C++, about 20 s for this tiny model on 2 cores)
runs only in a slow test. The graph itself needs CUDA.
"""

import pytest
import torch

from autograder.data import make_task
from autograder.reference.loss import label_smoothed_loss, noam_lr
from autograder.reference.model import EncoderDecoder, TransformerConfig
from autograder.reference.training import captured, checkpoint
from autograder.reference.training.stream import pad_to_bucket
from autograder.reference.training.train import TrainConfig, make_optimizer, step_function, train, training_batches

TOLERANCE = 1e-5
STEPS = 8
NO_CUDA = "needs a CUDA GPU (run `make test-gpu` on a machine with one)"
TASK = dict(num_train=200, num_valid=10, num_test=0, seed=0, num_symbols=6, max_len=9)


def _model(device="cpu", d_model=16):
    torch.manual_seed(0)
    return EncoderDecoder(
        TransformerConfig(9, 9, d_model=d_model, num_heads=2, num_layers=1, d_ff=2 * d_model, dropout=0.0, max_len=32)
    ).to(device)


def _losses(device="cpu", steps=STEPS, **modes):
    config = TrainConfig(steps=steps, batch_size=16, warmup=4, lr_factor=0.5, progress=False, amp="none", **modes)
    return train(_model(device), make_task("reverse", **TASK), config, device=device)


@pytest.fixture(scope="module")
def eager():
    return _losses()


def test_padding_to_buckets_changes_nothing():
    """Does a batch padded to 16 rows and lengths a multiple of 8 give the same loss and gradients?"""
    task = make_task("reverse", **TASK)
    src, tgt = next(training_batches(task, TrainConfig(batch_size=13)))
    big_src, big_tgt = pad_to_bucket(src, tgt, 16, 8, 0)
    assert big_src.shape[0] == 16 and big_src.shape[1] % 8 == 0 and big_tgt.shape[1] % 8 == 0
    results = []
    for s, t in ((src, tgt), (big_src, big_tgt)):
        model = _model()
        loss = label_smoothed_loss(model(s, t[:, :-1]), t[:, 1:], 0.1, 0)
        loss.backward()
        # (not the weights after an Adam step: the key bias's true gradient is 0, and Adam turns its
        # rounding noise into a full-size step; see the appendix's data-parallel section)
        results.append((loss.item(), [p.grad.clone() for p in model.parameters()]))
    assert abs(results[0][0] - results[1][0]) < TOLERANCE
    for p, q in zip(results[0][1], results[1][1], strict=True):
        torch.testing.assert_close(p, q, rtol=0, atol=TOLERANCE)


def test_compiled_step_equals_eager_on_cpu(eager):
    """Does --compile in its default plan (backend aot_eager) give the eager losses within the stated tolerance?"""
    torch._dynamo.reset()
    compiled = _losses(compile="aot_eager")
    assert len(compiled) == STEPS
    assert max(abs(a - b) for a, b in zip(compiled, eager, strict=True)) < TOLERANCE, (compiled, eager)


def test_graph_body_equals_eager_on_cpu(eager):
    """Does the step a CUDA graph holds (padded batch, tensor learning rate), run
    eagerly on the CPU, give the eager losses within the stated tolerance?"""
    graphed = _losses(cuda_graph=True)
    assert max(abs(a - b) for a, b in zip(graphed, eager, strict=True)) < TOLERANCE, (graphed, eager)


def test_graph_refuses_float16():
    """Is float16 refused for a CUDA graph, with the reason (its GradScaler reads gradients on the CPU)?"""
    model = _model()
    optimizer, scheduler = make_optimizer(model, TrainConfig())
    with pytest.raises(ValueError, match="GradScaler"):
        captured.GraphedStep(
            model,
            optimizer,
            scheduler,
            smoothing=0.1,
            pad_id=0,
            clip_norm=1.0,
            dtype=torch.float16,
            device=torch.device("cpu"),
        )


@pytest.mark.parametrize("plan", [name for name in captured.COMPILE_PLANS if name != captured.COMPILE_PLAN])
def test_every_compile_plan_equals_eager_on_cpu(eager, plan):
    """Does each plan of --compile but its default (the test above), such as the forward pass and the loss
    compiled as one function or Adam's fused kernel, give the eager losses within the stated tolerance
    (backend aot_eager)?"""
    torch._dynamo.reset()
    compiled = _losses(compile="aot_eager", compile_plan=plan)
    assert max(abs(a - b) for a, b in zip(compiled, eager, strict=True)) < TOLERANCE, (compiled, eager)


def test_plans_choose_adams_implementation_and_a_resume_keeps_its_own(tmp_path):
    """Does a plan with fused_adam build Adam with fused=True (and only when compiling), is an unknown plan
    refused with the choices, and does a resume keep the resuming run's implementation, not the file's?"""
    for name, plan in captured.COMPILE_PLANS.items():
        optimizer, _ = make_optimizer(_model(), TrainConfig(compile="aot_eager", compile_plan=name))
        group = optimizer.param_groups[0]
        assert bool(group["fused"]) is plan.fused_adam and bool(group["foreach"]) is not plan.fused_adam, name
        eager_group = make_optimizer(_model(), TrainConfig(compile_plan=name))[0].param_groups[0]
        assert not eager_group["fused"] and eager_group["foreach"], name
    with pytest.raises(ValueError, match="loss\\+fused-adam"):
        captured.compile_plan("everything")
    torch._dynamo.reset()
    fused = TrainConfig(
        steps=2,
        batch_size=16,
        warmup=4,
        progress=False,
        amp="none",
        compile="aot_eager",
        compile_plan="loss+fused-adam",
    )
    task = make_task("reverse", **TASK)
    train(_model(), task, fused, device="cpu", out=tmp_path / "fused.pt")
    model = _model()
    optimizer, scheduler = make_optimizer(model, TrainConfig())
    checkpoint.restore(
        checkpoint.load(tmp_path / "fused.pt"),
        model=model,
        optimizer=optimizer,
        scheduler=scheduler,
        scaler=None,
        data=training_batches(task, TrainConfig(batch_size=16)),
    )
    assert not optimizer.param_groups[0]["fused"] and optimizer.param_groups[0]["foreach"]
    assert optimizer.state_dict()["state"][0]["exp_avg"].abs().sum() > 0  # the moments did come from the file


def test_inductor_step_equals_eager_on_cpu(eager):
    """Does torch.compile with inductor (generated C++ kernels) give the eager losses within 1e-4?"""
    torch._dynamo.reset()
    compiled = _losses(compile="inductor")
    assert max(abs(a - b) for a, b in zip(compiled, eager, strict=True)) < 1e-4, (compiled, eager)


def _learning_rates(device: str, steps: int, **modes) -> list[float]:
    """The learning rate each optimizer step of a run took (read as the step begins; a replayed graph calls
    no hook, so there the rate is read from the tensor it reads, after the step)."""
    model = _model(device)
    config = TrainConfig(steps=steps, batch_size=16, warmup=4, lr_factor=0.5, progress=False, amp="none", **modes)
    optimizer, scheduler = make_optimizer(model, config)
    take_step = step_function(model, config, torch.device(device), optimizer, scheduler, None, None, pad_id=0)
    seen: list[float] = []
    if not config.cuda_graph or device == "cpu":
        optimizer.register_step_pre_hook(lambda opt, *_: seen.append(float(opt.param_groups[0]["lr"])))
    data = training_batches(make_task("reverse", **TASK), config)
    for _ in range(steps):
        src, tgt = pad_to_bucket(*next(data), config.batch_size, config.bucket, 0)
        take_step(src.to(device), tgt.to(device))
        if config.cuda_graph and device != "cpu":
            seen.append(float(optimizer.param_groups[0]["lr"]))
    return seen


def test_graphed_and_eager_steps_follow_one_schedule():
    """Do the eager step and the step a CUDA graph holds (run eagerly here) take the same learning rate at
    steps 1 to 12, factor * noam_lr(n), through the warmup's peak and after it?"""
    expected = [0.5 * noam_lr(n, 16, 4) for n in range(1, 13)]
    eager, graphed = _learning_rates("cpu", 12), _learning_rates("cpu", 12, cuda_graph=True)
    assert eager == pytest.approx(expected, rel=1e-6) and graphed == pytest.approx(expected, rel=1e-6)


@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)
def test_graphed_step_follows_the_eager_schedule_on_cuda():
    """On CUDA, do the replayed graphs take the learning rates of the eager step at steps 1 to 12?"""
    expected = [0.5 * noam_lr(n, 16, 4) for n in range(1, 13)]
    assert _learning_rates("cuda", 12) == pytest.approx(expected, rel=1e-6)
    assert _learning_rates("cuda", 12, cuda_graph=True) == pytest.approx(expected, rel=1e-6)


@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)
def test_cuda_graph_step_equals_eager_on_cuda():
    """On CUDA, does the replayed graph (after its warm-up steps) give the eager losses within 1e-4 in float32,
    and does a checkpoint of a graphed run resume eagerly?"""
    eager = _losses("cuda")
    graphed = _losses("cuda", cuda_graph=True)
    assert max(abs(a - b) for a, b in zip(graphed, eager, strict=True)) < 1e-4, (graphed, eager)


@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)
def test_cuda_graphs_of_several_shapes_share_one_pool_and_equal_eager_on_cuda(monkeypatch):
    """With buckets of 4 (several batch shapes, one graph each, replayed in any order), do the graphs share
    one memory pool, and do the losses still equal the eager ones within 1e-4 (a graph that overwrote
    memory another one reads would break them)?"""
    pools = {}
    capture = captured.GraphedStep._capture

    def spy(self, shape, src, tgt):
        capture(self, shape, src, tgt)
        pools[shape] = self.graphs[shape][0].pool()

    monkeypatch.setattr(captured.GraphedStep, "_capture", spy)
    steps = 3 * STEPS
    eager = _losses("cuda", steps=steps)
    graphed = _losses("cuda", steps=steps, cuda_graph=True, bucket=4)
    assert len(pools) >= 2 and len(set(pools.values())) == 1, pools
    assert max(abs(a - b) for a, b in zip(graphed, eager, strict=True)) < 1e-4, (graphed, eager)


@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)
def test_cuda_graph_checkpoint_resumes_on_cuda(tmp_path):
    """Does a graphed run's checkpoint (tensor learning rate, capturable Adam) resume, graphed and eager?"""
    config = TrainConfig(steps=4, batch_size=16, warmup=4, progress=False, amp="none", cuda_graph=True)
    task = make_task("reverse", **TASK)
    train(_model("cuda"), task, config, device="cuda", out=tmp_path / "run.pt")
    state = checkpoint.load(tmp_path / "run.pt")
    assert isinstance(state["optimizer"]["param_groups"][0]["lr"], float)
    for graph in (True, False):
        again = TrainConfig(steps=STEPS, batch_size=16, warmup=4, progress=False, amp="none", cuda_graph=graph)
        assert len(train(_model("cuda"), task, again, device="cuda", resume=state)) == STEPS
    # a fused Adam's checkpoint (the plan loss+fused-adam) resumes in a graph too
    fused = TrainConfig(
        steps=4,
        batch_size=16,
        warmup=4,
        progress=False,
        amp="none",
        compile="aot_eager",
        compile_plan="loss+fused-adam",
    )
    torch._dynamo.reset()
    train(_model("cuda"), task, fused, device="cuda", out=tmp_path / "fused.pt")
    again = TrainConfig(steps=STEPS, batch_size=16, warmup=4, progress=False, amp="none", cuda_graph=True)
    assert (
        len(train(_model("cuda"), task, again, device="cuda", resume=checkpoint.load(tmp_path / "fused.pt"))) == STEPS
    )


@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)
def test_compiled_step_on_cuda():
    """On CUDA, does inductor with CUDA graphs (mode reduce-overhead) give the eager losses within 1e-3?"""
    torch._dynamo.reset()
    eager = _losses("cuda")
    compiled = _losses("cuda", compile="inductor")
    assert max(abs(a - b) for a, b in zip(compiled, eager, strict=True)) < 1e-3, (compiled, eager)


@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)
def test_compiled_loss_and_fused_adam_on_cuda():
    """On CUDA, does the plan loss+fused-adam (forward and loss compiled as one function, inductor with CUDA
    graphs; Adam's fused kernel) give the eager losses within 1e-3?"""
    torch._dynamo.reset()
    eager = _losses("cuda")
    compiled = _losses("cuda", compile="inductor", compile_plan="loss+fused-adam")
    assert max(abs(a - b) for a, b in zip(compiled, eager, strict=True)) < 1e-3, (compiled, eager)


# what the course needs besides torch, numpy, pytest, tqdm and matplotlib, which a lent GPU machine's own
# Python may lack (it has those, safetensors, tokenizers and transformers): import names of requirements.txt
NOT_ON_A_GPU_MACHINE = (
    "nbgrader",
    "nbformat",
    "nbclient",
    "jupyter_book",
    "jupyterlab",
    "ipykernel",
    "sacrebleu",
    "nh3",
    "copydetect",
    "sqlalchemy",
    "psycopg2",
    "selenium",
    "sphinxcontrib",
    "mypy",
)


def test_cuda_tests_collect_without_the_course_tools():
    """Does `make test-gpu`'s selection (tests/reference -k on_cuda) collect, every CUDA test in it, when the
    course's other requirements cannot be imported (as on a lent GPU machine with its own Python)?"""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    code = (
        "import sys\n"
        f"sys.modules.update(dict.fromkeys({NOT_ON_A_GPU_MACHINE!r}))  # None: any import of them fails\n"
        "import pytest\n"
        "sys.exit(pytest.main(['tests/reference', '-k', 'on_cuda', '--collect-only', '-q',\n"
        "                      '-p', 'no:cacheprovider']))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    collected = [line for line in done.stdout.splitlines() if "::" in line]
    assert len(collected) >= 5 and all(line.endswith("on_cuda") for line in collected), done.stdout[-3000:]
