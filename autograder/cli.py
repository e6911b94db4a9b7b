"""``python -m autograder COMMAND``: the course's command-line entry points (thin: the work
is done in autograder.grading).

    release [LAB ...]      regenerate notebooks/LAB from solutions/LAB (nbgrader generate_assignment)
    workspace DIR          copy notebooks/ into DIR; a changed lab is refreshed, keeping your answers
    lab [DIR]              copy the labs into DIR (default workspace) and open a student's JupyterLab there
    grade [SUBMISSIONS]    autograde, feedback, grades.csv and a summary (make grade)
    train                  train the chapter 8 model; checkpoints resume exactly; torchrun for data parallel
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from autograder.grading.protocol.confinement import MEMORY_MB


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__.split("\n\n")[0])
    parser.add_argument("--course", type=Path, default=None,
                        help="the course root (default: the nearest folder up from here with nbgrader_config.py)")
    sub = parser.add_subparsers(dest="command", required=True, help="what to do (each has its own --help)")

    release = sub.add_parser("release", help="regenerate notebooks/ from solutions/ (byte-identical on a rerun)")
    release.add_argument("labs", nargs="*", metavar="LAB",
                         help="labs to release, such as 02-self-attention (default: all)")

    workspace = sub.add_parser("workspace", help="copy the released labs into a student's folder, keeping their work")
    workspace.add_argument("dir", type=Path, metavar="DIR", help="the student's folder (created if needed)")
    workspace.add_argument("--lab", action="append", default=None, metavar="LAB", dest="labs",
                           help="copy or refresh only this lab, such as 02-self-attention (repeatable)")

    # --- lab: a student's JupyterLab (make lab) ---
    lab = sub.add_parser("lab", help="copy the labs into DIR as `workspace` does, then open JupyterLab there "
                                     "with a student's tools only")
    lab.add_argument("dir", type=Path, nargs="?", default=Path("workspace"), metavar="DIR",
                     help="the student's folder (default: workspace)")
    lab.add_argument("--lab", action="append", default=None, metavar="LAB", dest="labs",
                     help="copy or refresh only this lab before starting, such as 02-self-attention (repeatable)")
    lab.add_argument("--port", type=int, default=None,
                     help="the server's port (default: 8888, or the next free one)")
    lab.add_argument("--ip", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)")
    lab.add_argument("--token", default=None, help="the login token (default: a random one, shown in the URL)")
    lab.add_argument("--no-browser", action="store_true", help="do not open a browser")
    # --- end of lab ---

    grade = sub.add_parser("grade", help="autograde submissions, generate feedback, write grades.csv, print a summary")
    grade.add_argument("submissions", type=Path, nargs="?", default=Path("submitted"),
                       help="a folder STUDENT/LAB/LAB.ipynb (or STUDENT/LAB.ipynb), or an LMS zip download "
                            "with files named STUDENT_..._LAB.ipynb (default: submitted)")
    grade.add_argument("--jobs", "-j", type=int, default=1, help="notebooks graded at once (default: 1)")
    grade.add_argument("--db", default=None,
                       help="gradebook SQLAlchemy URL, such as postgresql+psycopg2://user@host/db "
                            "(default: ROOT/gradebook.db)")
    grade.add_argument("--student", action="append", default=None, metavar="ID",
                       help="grade only this student (repeat for several)")
    grade.add_argument("--lab", action="append", default=None, metavar="LAB", help="grade only this lab (repeatable)")
    grade.add_argument("--timeout", type=int, default=None,
                       help="seconds a cell may run before it is interrupted (default: 30, from nbgrader_config.py)")
    grade.add_argument("--memory-mb", type=int, default=MEMORY_MB,
                       help="address-space limit of a grading kernel in MiB")
    grade.add_argument("--job-timeout", type=int, default=600,
                       help="seconds one student's lab may take in all before it is stopped (default: 600)")
    grade.add_argument("--csv", type=Path, default=None, help="where to write the grades (default: ROOT/grades.csv)")
    grade.add_argument("--no-progress", action="store_true", help="no progress bar")
    grade.add_argument("--no-sandbox", action="store_true",
                       help="run student code without the bubblewrap sandbox (only for a class whose code you trust; "
                            "every summary line then says so)")
    _train_parser(sub)
    return parser


def _copy_labs(root: Path, target: Path, labs: list[str] | None = None) -> None:
    """Copy the released labs into ``target`` (workspace.sync): new ones copied, changed ones
    refreshed with the student's answers and a backup; say what happened."""
    from autograder.grading import workspace

    print("\n".join(workspace.describe(workspace.sync(root, target, labs), target)))


def _lab(root: Path, args: argparse.Namespace) -> int:
    """Copy the labs into args.dir, then replace this process by JupyterLab on it."""
    from autograder.grading import lab

    _copy_labs(root, args.dir, args.labs)
    command, env = lab.command(args.dir, port=args.port, ip=args.ip, token=args.token, browser=not args.no_browser)
    if "--allow-root" in command:
        print("running as root (a container?): JupyterLab refuses that unless told, so --allow-root is passed")
    return lab.run(command, env)


# --- train: the chapter 8 recipe from the command line (make train) ---
# The recipe of chapter 8's run; flags left unset take these values, or the checkpoint's with --resume.
TRAIN_RECIPE = dict(num_train=10_000, num_valid=200, num_test=500, data_seed=0, d_model=64, num_heads=4,
                    num_layers=2, d_ff=128, dropout=0.0, fused=False, batch_size=64, warmup=200, lr_factor=0.5,
                    smoothing=0.1, clip_norm=1.0, seed=0)


def _train_parser(sub) -> None:
    from autograder.reference.train import AUTO_LOW_PRECISION_MIN_D_MODEL, TrainConfig

    train = sub.add_parser(
        "train", help="train the encoder-decoder of chapter 8 and write a checkpoint that resumes exactly",
        description="Train the chapter 8 model with its recipe (autograder.reference.train), print the held-out "
                    "exact match, and write one checkpoint file. Several processes: torchrun --nproc_per_node N "
                    "-m autograder train ... (data parallel; each process takes its share of the batch).")
    a = train.add_argument
    a("--task", default=None, help="task of autograder.data.make_task: copy, reverse, dates or add (default: dates)")
    a("--steps", type=int, default=400, help="optimizer steps in all; a resumed run goes on up to this step")
    a("--batch-size", type=int, default=None, help="pairs per step in all processes together (default: 64)")
    a("--seed", type=int, default=None, help="seed of the weights, dropout and batch order (default: 0)")
    a("--data-seed", type=int, default=None, help="seed that generates the task's pairs (default: 0)")
    a("--out", type=Path, default=None,
      help="checkpoint file to write (default: the --resume file, else checkpoints/TASK.pt)")
    a("--resume", type=Path, default=None, metavar="PATH",
      help="go on from this checkpoint: model, recipe and data come from it; --steps is the total")
    a("--device", choices=["auto", "cpu", "cuda", "mps"], default="auto",
      help="where to train; auto: with --resume the checkpoint's device type, else cuda, then mps, then cpu "
           "(default: auto)")
    a("--amp", choices=["none", "bf16", "fp16", "auto"], default=None,
      help="mixed precision: bf16, fp16 (with a GradScaler), none, or auto = bf16 on CUDA for a captured step "
           f"of a model at least {AUTO_LOW_PRECISION_MIN_D_MODEL} wide, else float32 (default: with --resume the "
           "checkpoint's precision, else auto)")
    a("--compile", nargs="?", const="inductor", default=TrainConfig.compile, metavar="BACKEND",
      help="torch.compile the model (BACKEND: inductor, the default, or aot_eager); on CUDA inductor replays "
           "its kernels as CUDA graphs (default: eager)")
    a("--cuda-graph", action=argparse.BooleanOptionalAction, default=TrainConfig.cuda_graph,
      help="capture the whole step (forward, loss, backward, clipping, Adam, the schedule) as a CUDA graph "
           f"and replay it; batches padded to lengths that are multiples of {TrainConfig.bucket} "
           f"(CUDA, one process, not fp16; default: {'on' if TrainConfig.cuda_graph else 'off'})")
    a("--eval-every", type=int, default=100, help="steps between validation checks (0: none; default: 100)")
    a("--eval-size", type=int, default=200, help="validation pairs per check (default: 200)")
    a("--save-every", type=int, default=0, help="steps between checkpoints (0: only at the end; default: 0)")
    a("--stop-at", type=float, default=None, help="stop once validation exact match reaches this (default: never)")
    a("--dropout", type=float, default=None, help="dropout probability (default: 0.0)")
    a("--d-model", type=int, default=None, help="model width D (default: 64)")
    a("--num-heads", type=int, default=None, help="attention heads H (default: 4)")
    a("--num-layers", type=int, default=None, help="encoder layers = decoder layers (default: 2)")
    a("--d-ff", type=int, default=None, help="feed-forward width F (default: 128)")
    a("--fused", action=argparse.BooleanOptionalAction, default=None,
      help="PyTorch's fused attention and LayerNorm kernels (same math, faster; default: off)")
    a("--warmup", type=int, default=None, help="Noam warmup steps (default: 200)")
    a("--lr-factor", type=float, default=None, help="multiplier of the Noam schedule (default: 0.5)")
    a("--smoothing", type=float, default=None, help="label smoothing (default: 0.1)")
    a("--clip-norm", type=float, default=None, help="clip the gradient norm to this (default: 1.0)")
    a("--num-train", type=int, default=None, help="training pairs (default: 10000)")
    a("--num-valid", type=int, default=None, help="validation pairs (default: 200)")
    a("--num-test", type=int, default=None, help="held-out test pairs, scored at the end (default: 500)")
    a("--threads", type=int, default=0, help="torch CPU threads per process (0: torch's choice; default: 0)")
    a("--no-progress", action="store_true", help="no progress bar")


def _train(args: argparse.Namespace) -> int:
    """Build (or reload) the task and model, train, score the test split on rank 0."""
    import torch

    from autograder.data import make_task
    from autograder.reference import checkpoint, distributed
    from autograder.reference.device import best_device
    from autograder.reference.model import EncoderDecoder, TransformerConfig
    from autograder.reference.train import TrainConfig, amp_dtype, evaluate, train

    if args.threads:
        torch.set_num_threads(args.threads)
    state = checkpoint.load(args.resume) if args.resume is not None else None
    if args.device != "auto":
        device = torch.device(args.device)
    else:  # a resume keeps its device type (a warning says when it cannot)
        device = checkpoint.saved_device(state) if state is not None else best_device()
    device = distributed.setup(device)
    main_rank = distributed.is_main()
    say = print if main_rank else (lambda *a, **k: None)
    given = {k: getattr(args, k) for k in ("task", *TRAIN_RECIPE) if getattr(args, k, None) is not None}
    if state is not None:
        if given:
            say("with --resume the checkpoint's recipe is used; ignored: "
                + ", ".join(f"--{k.replace('_', '-')}" for k in given), file=sys.stderr)
        spec, saved = dict(state["task"]), state["train_config"]
        model = EncoderDecoder(checkpoint.model_config(state))
    else:
        r = {**TRAIN_RECIPE, **given}
        spec = dict(name=args.task or "dates", num_train=r["num_train"], num_valid=r["num_valid"],
                    num_test=r["num_test"], seed=r["data_seed"])
        saved = dict(batch_size=r["batch_size"], warmup=r["warmup"], lr_factor=r["lr_factor"],
                     smoothing=r["smoothing"], clip_norm=r["clip_norm"], seed=r["seed"])
    if saved["batch_size"] < distributed.world_size():
        say(f"--batch-size {saved['batch_size']} is smaller than the {distributed.world_size()} processes",
            file=sys.stderr)
        return 2
    task = make_task(**spec)
    if state is None:
        torch.manual_seed(r["seed"])  # the same initial weights in every process
        model = EncoderDecoder(TransformerConfig(
            len(task.src_vocab), len(task.tgt_vocab), d_model=r["d_model"], num_heads=r["num_heads"],
            num_layers=r["num_layers"], d_ff=r["d_ff"], dropout=r["dropout"], fused_kernels=r["fused"],
            max_len=max(64, task.max_src_len, task.max_tgt_len)))
        torch.manual_seed(r["seed"] + 1000 * distributed.rank())  # dropout masks differ between processes
    config = TrainConfig(
        steps=args.steps, amp=args.amp or (state and checkpoint.saved_amp(state)) or saved.get("amp", "auto"),
        compile=args.compile, cuda_graph=args.cuda_graph, progress=not args.no_progress,
        eval_every=args.eval_every, eval_size=args.eval_size, stop_at=args.stop_at, save_every=args.save_every,
        **{k: saved[k] for k in ("batch_size", "warmup", "lr_factor", "smoothing", "clip_norm", "seed")})
    out = args.out or args.resume or Path("checkpoints") / f"{spec['name']}.pt"
    say(task.describe())
    world = distributed.world_size()
    dtype = amp_dtype(device, config.amp, d_model=model.config.d_model,
                      captured=config.cuda_graph or config.compile is not None)
    say(f"model: {sum(p.numel() for p in model.parameters()):,} parameters; device {device}; amp {config.amp} "
        f"({dtype or torch.float32}); batch {config.batch_size} over {world} process(es); "
        f"{'from step ' + str(state['step']) if state else 'from scratch'} to step {config.steps}")

    if config.cuda_graph and device.type != "cuda":
        say(f"--cuda-graph: a graph needs CUDA; on {device.type} the same step runs eagerly", file=sys.stderr)

    def report(step: int, m: dict) -> None:
        from tqdm import tqdm

        tqdm.write(f"step {step:5d}  loss {m['loss']:.3f}  validation exact match {m['exact_match']:.3f}")

    start = time.perf_counter()
    try:
        train(model, task, config, device, callback=report, out=out, resume=state, task_spec=spec)
    finally:
        seconds = time.perf_counter() - start
        distributed.teardown()
    if main_rank:  # the best validated weights, which the checkpoint keeps beside the last state
        saved_state = checkpoint.load(out)
        best = saved_state.get("best")
        test = evaluate(checkpoint.load_model(saved_state).to(device), task.test, task.tgt_vocab, device=device)
        which = (f"best validated weights, step {best['step']} (validation exact match "
                 f"{best['metrics']['exact_match']:.3f})" if best else "last weights (never validated)")
        say(f"held-out test exact match {test['exact_match']:.1%} (token accuracy {test['token_accuracy']:.1%}) "
            f"on {len(task.test)} pairs with the {which}; training took {seconds:.0f} s")
        say(f"checkpoint: {out} (--resume goes on from step {saved_state['step']}; load_model gives the best)")
    return 0
# --- end of train ---

def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "train":  # needs no course folder: it runs wherever the package is installed
        return _train(args)
    from autograder.grading import course

    root = course.find_root(args.course)
    try:  # a lab name that is not in the course: the message, not a traceback
        if args.command == "release":
            for path in course.release(root, args.labs):
                print(f"released {path.relative_to(root)}")
            return 0
        if args.command == "workspace":
            _copy_labs(root, args.dir, args.labs)
            return 0
        if args.command == "lab":
            return _lab(root, args)
    except course.UnknownLab as err:
        print(err, file=sys.stderr)
        return 2
    from autograder.grading.grader import pipeline, preflight, sandbox
    from autograder.grading.protocol import boot

    source = args.submissions if args.submissions.is_absolute() else Path.cwd() / args.submissions
    if not source.exists():
        print(f"no submissions at {source}", file=sys.stderr)
        return 2
    options = pipeline.Options(jobs=args.jobs, db_url=args.db, students=args.student, labs=args.lab,
                               timeout=args.timeout, memory_mb=args.memory_mb, job_timeout=args.job_timeout,
                               csv_path=args.csv, progress=not args.no_progress, sandbox=not args.no_sandbox)
    try:
        outcomes = pipeline.grade(root, source, options)
    except (pipeline.UnknownSelection, sandbox.Unavailable, preflight.PreflightFailed) as err:
        print(err, file=sys.stderr)
        return 2
    print(pipeline.summary(outcomes))
    if warning := boot.mismatch(root):
        print(f"Note on the grader: {warning}")
    print(f"grades written to {options.csv_path or root / 'grades.csv'}")
    grader_errors = [o for o in outcomes if any(note.startswith("GRADER ERROR") for note in o.notes)]
    if grader_errors:
        print(f"{len(grader_errors)} submission(s) were not graded for the grader's fault (GRADER ERROR above): "
              "fix the cause and grade them again", file=sys.stderr)
    return 1 if grader_errors else 0
