"""Which release of the course package a lab expects, and where that release lives.

The distribution is ``transformer-course`` (the name ``autograder`` on PyPI belongs to
other projects); the import package is ``autograder``. Each released lab records the
course version it was released with, and its install cell installs exactly that version:
first the wheel that ``make book`` publishes with the site, then the repository's tag.
"""

from __future__ import annotations

DISTRIBUTION = "transformer-course"
REPOSITORY = "https://github.com/transformer-course/transformer-course"


def wheel_name(version: str) -> str:
    """The file name of the course package's wheel (``pip wheel`` normalises the name)."""
    return f"{DISTRIBUTION.replace('-', '_')}-{version}-py3-none-any.whl"


def wheel_url(version: str, site: str) -> str:
    """Where the site built by ``make book`` serves the wheel of ``version``."""
    return f"{site.rstrip('/')}/wheels/{wheel_name(version)}"


def tag_requirement(version: str) -> str:
    """The fallback: the repository's tag ``vVERSION``."""
    return f"{DISTRIBUTION} @ git+{REPOSITORY}@v{version}"


def mismatch(version: str, installed: str, site: str | None = None) -> str | None:
    """The line that tells a student their installed course package (``installed``) is not
    the lab's ``version``, and how to fix it; None when they agree (``autograder.require``)."""
    if installed == version:
        return None
    source = f'"{DISTRIBUTION} @ {wheel_url(version, site)}"' if site else f'"{tag_requirement(version)}"'
    return (
        f"This lab was released with the course package {version}, but {installed} is installed: "
        f"run `%pip install {source}` and restart the kernel, or open the lab's current release "
        f"(`make lab LAB=<lab>` on your own machine)."
    )
