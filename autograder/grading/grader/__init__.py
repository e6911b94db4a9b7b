"""The grader's side: code that never runs a submission (ARCHITECTURE.md, "Trust model of grading").

A submission travels through five stations, each a package of its own steps, in this order; a
module of a later station never imports one of an earlier station, and each list of steps visits
the stations in this order (``tests/test_architecture.py``):

    intake      collected into submitted/, an id of its own, screened, staged for nbgrader
    run         the jobs, nbgrader's autograde in a sandboxed kernel, and the independent check
    verdict     the points decided from the verdicts, the verdicts into the notebook, flags,
                verdicts.json
    output      feedback pages, the gradebook's scores, grades.csv
    report      the class report, from the recorded verdicts

What every station may read, beside them:

    job             ``Job`` and ``Result``: what the pipeline asks a worker and what it answers;
                    ``Submission``, what a worker's steps share, and each exercise's ``Verdict``
    grading         ``Options`` and ``Grading``, what a class's steps share; what came of each
                    student's lab (``Outcome``), and the summary an instructor reads
    lab_cells       a lab's test cells, solutions and hidden-test blocks
    verdicts_json   the verdicts of one student's lab as data (written by verdict, read by report)
    safe_text       student-chosen text made safe on a summary line or in a spreadsheet cell
    in_parts        a class graded in parts: a stamp per submission and the start-up check's
                    record (``stamps``), the plan and the shards' states (``shards``), files
                    written whole (``atomic``); its ``conductor`` runs the stations in shards

and, outside ``grader/``, the course's layout (``grading/layout.py``) and the sandbox's limits
(``grading/protocol/confinement.py``). ``pipeline`` runs the stations for a class: ``grade``
and its ``STEPS``; ``in_parts.conductor`` runs them as a grading in shards (``--intake``,
``--shard``, ``--finish``).
"""

import sys

# jsonschema 4.25 and later (which nbformat validates with) import rfc3987-syntax where it is
# installed, as jupyter-events has it, and that compiles 39 grammars at import: 1.8 CPU-s of every
# grading process. requirements.txt pins 4.24.1; an environment of another jsonschema (a course
# wheel installed beside other packages) still grades without them: no schema of nbformat's or
# nbgrader's checks an IRI's syntax.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
