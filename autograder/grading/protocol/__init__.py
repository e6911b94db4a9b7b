"""What both sides use without executing a submission (ARCHITECTURE.md, "Trust model of grading").

boot         the one ``autograder`` every grading process imports, and the command lines
             that start one
confinement  a sandbox's limits and output cap, agreed by the grader and the launcher
wire         the plain values that cross the boundary (JSON and safetensors, no pickle)
remote       handles to objects on the other side, over the wire
errors       an exception raised on the other side, as this side sees it
bounds       what the grader spends for a child: parameters kept, a callback's memory and time
"""
