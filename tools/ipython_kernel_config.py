# The kernels of this environment (`make venv` copies this file to .venv/etc/ipython/, where IPython
# reads it): without the one-line warning that every kernel started over TCP prints, "Kernel is
# running over TCP without encryption". Jupyter Book starts a kernel per lecture on 127.0.0.1 and
# would print it once per lecture; other warnings of the kernel are kept.
import logging


def _not_the_tcp_notice(record: logging.LogRecord) -> bool:
    return "Kernel is running over TCP without encryption" not in record.getMessage()


logging.getLogger("IPKernelApp").addFilter(_not_the_tcp_notice)
