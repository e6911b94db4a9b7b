"""Tests of the training recipe (autograder/reference/training/recipe.py); the flags made from it are tested in
tests/cli/test_train.py."""

import dataclasses

from autograder.reference.model import TransformerConfig
from autograder.reference.training import recipe
from autograder.reference.training.recipe import TRAIN_RECIPE, TrainRecipe
from autograder.reference.training.train import TrainConfig


def test_the_recipe_builds_the_configs_without_changing_their_defaults():
    """Do the model's and the trainer's configs come from the recipe, while TransformerConfig's and
    TrainConfig's own defaults stay the paper's (which the checks and old checkpoints rely on)?"""
    from autograder.data import make_task

    task = make_task(TRAIN_RECIPE.task, num_train=20, num_valid=2, num_test=2)
    model, config = TRAIN_RECIPE.model_config(task), TRAIN_RECIPE.train_config()
    assert (model.d_model, model.d_ff, model.dropout) == (TRAIN_RECIPE.d_model, TRAIN_RECIPE.d_ff, 0.0)
    assert (config.warmup, config.lr_factor, config.steps) == (TRAIN_RECIPE.warmup, TRAIN_RECIPE.lr_factor, 400)
    assert (TransformerConfig(10, 10).d_model, TransformerConfig(10, 10).d_ff) == (128, 512)
    assert (TrainConfig().warmup, TrainConfig().lr_factor, TrainConfig().steps) == (400, 1.0, 2000)


def test_every_field_of_the_trainers_config_comes_from_the_recipe():
    """Is each field of TrainConfig either the recipe's field of the same name, carried into train_config()
    with its value, or one of the few that keep TrainConfig's default (named in TRAINER_DEFAULTS)?"""
    names = {f.name for f in dataclasses.fields(TrainRecipe)}
    changed = dataclasses.replace(
        TRAIN_RECIPE,
        steps=7,
        batch_size=9,
        warmup=3,
        lr_factor=0.25,
        smoothing=0.2,
        clip_norm=2.0,
        seed=5,
        amp="bf16",
        progress=False,
        eval_every=4,
        eval_size=6,
        stop_at=0.5,
        time_limit=9.0,
        save_every=2,
        compile="aot_eager",
        cuda_graph=True,
    )
    config = changed.train_config()
    for field in dataclasses.fields(TrainConfig):
        if field.name in recipe.TRAINER_DEFAULTS:
            assert field.name not in names, f"{field.name} is a recipe field: it should reach the config"
            assert getattr(config, field.name) == field.default, field.name
        else:
            assert field.name in names, f"TrainConfig.{field.name} has no recipe field and is not a trainer default"
            assert getattr(config, field.name) == getattr(changed, field.name), field.name
            assert getattr(config, field.name) != field.default, f"{field.name}: give it a value of its own above"


def test_the_model_has_room_for_a_captured_steps_padding():
    """Is the recipe's max_len a multiple of TrainConfig.bucket at least the task's longest sequence, so that
    a compiled or graphed step, which pads lengths up to such a multiple, fits its positional table (the
    addition task's longest source, 255 ids, is padded to 256)?"""
    from autograder.data import make_task

    task = make_task("add", num_train=40, num_valid=2, num_test=2, seed=0)
    longest = max(task.max_src_len, task.max_tgt_len)
    max_len = TRAIN_RECIPE.model_config(task).max_len
    assert max_len % TrainConfig.bucket == 0 and longest <= max_len < longest + TrainConfig.bucket, (longest, max_len)
    assert longest % TrainConfig.bucket != 0  # else this task would not show the rounding
