"""A class graded in parts: a grading that stops and starts again, or is cut into shards that run
side by side. What a grading has finished (``stamps``: one stamp per submission, written last,
and the start-up check's record of the course's state), the plan and the shards' states
(``shards``), the files written whole or not at all (``atomic``), and the second conductor,
``conductor``: ``grade --intake``, ``--shard I/N``, ``--finish``, each a list of the stations'
steps run by ``pipeline.run``.

Every station may read ``atomic``; the rest is the conductors'.
"""
