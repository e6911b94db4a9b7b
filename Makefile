# Thin wrappers: every target calls one tool. `make help` lists them.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
JOBS   ?= 1
SUBMISSIONS ?= submitted
# flags that change chapter 8's recipe (autograder/reference/training/recipe.py; python -m autograder train --help)
TRAIN_ARGS ?=

.PHONY: help venv book serve lint test test-fast test-gpu release lab grade export demo train bench map clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

# torch first, alone: the CPU build where no NVIDIA GPU is found, else CUDA (TORCH=cpu|cuda to choose; tools/torch_build.py)
# tools/ipython_kernel_config.py: the environment's kernels without the TCP notice each prints (make book starts one per lecture)
$(STAMP): requirements.txt pyproject.toml tools/torch_build.py tools/ipython_kernel_config.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python tools/torch_build.py
	$(BIN)/python -m pip install -r requirements.txt
	mkdir -p $(VENV)/etc/ipython && cp tools/ipython_kernel_config.py $(VENV)/etc/ipython/
	touch $(STAMP)

venv: $(STAMP)  ## create .venv and install everything (done by the other targets when needed; TORCH=cpu|cuda picks torch's build)

book: $(STAMP)  ## build the static site into _build/html (warnings are errors), with the course package's wheel
	$(BIN)/jupyter-book build . -W -n --keep-going
	@rm -rf _build/setuptools _build/html/wheels
	@printf '[build]\nbuild_base = _build/setuptools\n' > _build/setuptools.cfg  # the wheel is built under _build/, not build/
	@DIST_EXTRA_CONFIG=$(CURDIR)/_build/setuptools.cfg $(BIN)/python -m pip wheel --quiet --no-deps --wheel-dir _build/html/wheels .

serve:  ## serve _build/html on http://localhost:8000 for a look before publishing
	$(BIN)/python -m http.server 8000 --bind 127.0.0.1 --directory _build/html

lint: $(STAMP)  ## ruff format and ruff check (pyflakes, pycodestyle, isort, bugbear, pyupgrade), mypy: as pyproject.toml sets them
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy

TEST_WORKERS ?= 2
test: lint  ## lint and types, then the whole test suite, on TEST_WORKERS processes (default 2; 1 runs it in one)
	$(BIN)/python -m pytest $(if $(filter 1,$(TEST_WORKERS)),,-n $(TEST_WORKERS))

FAST := not (grading or book or browser or install or service or training)
test-fast: $(STAMP)  ## the everyday loop: every test but those that grade, build the book, drive a browser, install, start a service or train (markers: pyproject.toml)
	$(BIN)/python -m pytest $(if $(filter 1,$(TEST_WORKERS)),,-n $(TEST_WORKERS)) -m "$(FAST)"

test-gpu: $(STAMP)  ## the CUDA-only tests (graphed and compiled training steps; names contain on_cuda): needs a CUDA GPU
	$(BIN)/python -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 'make test-gpu: no CUDA GPU is visible')"
	$(BIN)/python -m pytest tests/reference -k on_cuda -rs

release: $(STAMP)  ## regenerate notebooks/ from solutions/ (nbgrader generate_assignment)
	$(BIN)/python -m autograder release

lab: $(STAMP)  ## copy the labs into workspace/ and open JupyterLab there (a changed lab is refreshed, your answers kept; LAB=NN-name: that one only)
	$(BIN)/python -m autograder lab workspace $(foreach l,$(LAB),--lab $(l))

grade: $(STAMP)  ## grade every submission in $(SUBMISSIONS) (a folder or an LMS zip download); JOBS=N
	$(BIN)/python -m autograder grade $(SUBMISSIONS) --jobs $(JOBS)

export: $(STAMP)  ## write a graded lab's grades as the files an LMS imports (LMS=moodle|canvas|blackboard LAB=NN-name; TEMPLATE=the LMS's own file to fill in)
	$(BIN)/python -m autograder export --lms $(LMS) $(LAB) $(if $(TEMPLATE),--template $(TEMPLATE))

demo: $(STAMP)  ## grade a small example class (four students of the warm-up lab) in demo/ and print where its results are
	$(BIN)/python -m autograder demo

train: $(STAMP)  ## train chapter 8's model with the course's recipe (autograder/reference/training/recipe.py), print its held-out exact match, write checkpoints/TASK.pt (TRAIN_ARGS=...)
	$(BIN)/python -m autograder train $(TRAIN_ARGS)

# the two tools of benchmarks/ that write a log where they are told (a GPU session's, a training run's) are not benchmarks
BENCH_TOOLS := benchmarks/gpu_session.py benchmarks/train_log.py
bench: $(STAMP)  ## run the benchmarks (ratios against PyTorch's own modules)
	for b in $(filter-out $(BENCH_TOOLS),$(wildcard benchmarks/*.py)); do $(BIN)/python $$b || exit 1; done

map:  ## rewrite ARCHITECTURE.md's list of every package and module from their docstrings (tools/module_map.py)
	$(PYTHON) tools/module_map.py

clean:  ## remove build outputs (keeps .venv and grading data)
	rm -rf _build .pytest_cache
