"""How a training run is set: ``TrainConfig``, every knob of ``train`` (steps, batch, schedule,
precision, validation, checkpoints, compilation) with its default, in one dataclass that a
checkpoint records and a recipe fills in.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TrainConfig:
    steps: int = 2000  # optimizer steps in all (a resumed run goes on up to this step)
    batch_size: int = 64  # pairs per step (the global batch, shared out between processes)
    warmup: int = 400  # Noam warmup steps: the learning rate peaks here
    lr_factor: float = 1.0  # multiplies the whole Noam schedule
    smoothing: float = 0.1  # label smoothing (0 = plain cross-entropy)
    clip_norm: float | None = 1.0  # clip the global gradient norm to this (None: no clipping)
    seed: int = 0  # batch order (the model's weights are seeded by its maker)
    amp: str | bool = "auto"  # "none", "bf16", "fp16" (+ GradScaler) or "auto": see amp_dtype
    progress: bool = True  # tqdm text progress bar
    eval_batch_size: int = 256  # pairs per greedy-decoding batch in evaluate()
    eval_every: int = 0  # evaluate on the validation split every N steps (0: never)
    eval_size: int = 200  # how many validation pairs those evaluations use
    stop_at: float | None = None  # stop once validation exact match reaches this (needs eval_every)
    save_every: int = 0  # write the checkpoint every N steps (0: only at the end; needs out)
    compile: str | None = None  # torch.compile with this backend ("inductor", "aot_eager"); None: eager
    compile_plan: str | None = None  # what compile compiles: a key of captured.COMPILE_PLANS (None: COMPILE_PLAN)
    cuda_graph: bool = False  # capture the whole step as a CUDA graph (CUDA, one process, not fp16)
    bucket: int = 16  # compiled or graphed: pad lengths to a multiple of this (few static shapes)
    time_limit: float = 0.0  # stop once this run has trained this many seconds, validations included (0: never)

    @property
    def captured(self) -> bool:
        """Whether the step is compiled or graphed: its batches are padded to buckets, and "auto" may
        choose a low precision for it."""
        return self.cuda_graph or self.compile is not None
