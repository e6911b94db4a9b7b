"""JupyterHub configuration for one course (book/guides/instructor.md, "The course on a JupyterHub").

Every user logs in with their Linux account (PAM) and gets a JupyterLab of their own, run as
that account by the default local spawner from the course's shared environment. Members of
the instructors' group keep nbgrader's instructor tools; everyone else in the students' group
gets the student's settings of ``make lab`` (``autograder/jupyter_student/``: no Formgrader,
no Create Assignment, no Course List). Hiding a tool is not what keeps students out of the
course: a student controls their own server and can turn Formgrader back on. The file
permissions do that (the guide's commands): the course folder belongs to the instructors'
group and nobody else may enter it, and each home is its owner's alone.

The names come from the environment, with the guide's defaults, so that the same file serves
any machine: ``COURSE_ENV`` (the shared environment), ``COURSE_ROOT`` (the course folder, where an
instructor's JupyterLab opens: Formgrader only works on a course inside the server's root
folder; the hub reads nothing from it), ``COURSE_INSTRUCTORS`` and
``COURSE_STUDENTS`` (the two Unix groups), ``HUB_BIND_URL`` (where the hub listens; put a
TLS-terminating proxy in front of it for anything but the loopback), and, for a machine where
the default ports are taken, ``HUB_INTERNAL_URL`` and ``HUB_PROXY_API_URL``.
Start it in a folder only root can read (it writes its database and cookie secret there):
``cd /srv/jupyterhub && $COURSE_ENV/bin/jupyterhub -f $COURSE_ROOT/hub/jupyterhub_config.py``.
"""

import grp
import importlib.util
import os
import pwd
from pathlib import Path

c = get_config()  # noqa: F821 - provided by traitlets when it loads this file

ENV = os.environ.get("COURSE_ENV", "/opt/transformer-course")
COURSE_ROOT = os.environ.get("COURSE_ROOT", "/srv/transformer-course")
INSTRUCTORS = os.environ.get("COURSE_INSTRUCTORS", "transformer-instructors")
STUDENTS = os.environ.get("COURSE_STUDENTS", "transformer-students")

c.JupyterHub.bind_url = os.environ.get("HUB_BIND_URL", "http://127.0.0.1:8000")
c.JupyterHub.hub_bind_url = os.environ.get("HUB_INTERNAL_URL", "http://127.0.0.1:8081")
c.ConfigurableHTTPProxy.api_url = os.environ.get("HUB_PROXY_API_URL", "http://127.0.0.1:8001")

# Linux accounts; only the course's two groups may log in. No PAM session is opened for a
# server (as in most containers, where pam_systemd and friends are absent).
c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.allowed_groups = {INSTRUCTORS, STUDENTS}
c.PAMAuthenticator.open_sessions = False

# Each server runs as its user, from the shared environment (a wheel install of the course,
# read-only for users), starting in the user's home.
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [f"{ENV}/bin/jupyterhub-singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.environment = {"PATH": os.pathsep.join([f"{ENV}/bin", "/usr/local/bin", "/usr/bin", "/bin"])}


def is_instructor(name: str) -> bool:
    """Whether the Linux account ``name`` is in the instructors' group (as its primary group or not)."""
    try:
        group = grp.getgrnam(INSTRUCTORS)
        return name in group.gr_mem or pwd.getpwnam(name).pw_gid == group.gr_gid
    except KeyError:
        return False


def student_settings() -> str:
    """The folder of the student's Jupyter settings in the course package installed in the environment."""
    spec = importlib.util.find_spec("autograder")  # the hub runs from the same environment
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"the course package is not installed in {ENV}: install its wheel there first")
    return str(Path(next(iter(spec.submodule_search_locations))) / "jupyter_student")


def apply_role(spawner) -> None:
    """An instructor's JupyterLab opens on the course folder; every other server gets the student's
    Jupyter settings (read before the user's own)."""
    if is_instructor(spawner.user.name):
        spawner.notebook_dir = COURSE_ROOT
    else:
        # a new dict: the configured one is shared by every spawner
        spawner.environment = {**spawner.environment, "JUPYTER_CONFIG_PATH": student_settings()}


c.Spawner.pre_spawn_hook = apply_role
