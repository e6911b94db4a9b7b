"""Offline, deterministic seq2seq tasks: vocabularies, generated splits, padded batches.

Example:
    >>> from autograder.data import make_task, batches
    >>> task = make_task("dates", num_train=1000, num_valid=100, num_test=100, seed=0)
    >>> src, tgt = next(batches(task.train, 32, task.src_vocab.pad_id))
"""

from autograder.data.batching import batches, collate
from autograder.data.tasks import TASK_NAMES, Task, make_task
from autograder.data.vocab import BOS_ID, EOS_ID, PAD_ID, Vocab

__all__ = ["BOS_ID", "EOS_ID", "PAD_ID", "TASK_NAMES", "Task", "Vocab", "batches", "collate", "make_task"]
