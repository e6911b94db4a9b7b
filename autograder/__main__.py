"""``python -m autograder``: the command line of ``autograder.cli``."""

from autograder.cli import main

raise SystemExit(main())
