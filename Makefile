# Transformer Math — every target does its own set-up (a .venv in this folder), idempotently.
#   make lab        JupyterLab on the course (127.0.0.1, token authentication on)
#   make test       unit tests + every notebook executed by nbval, outputs compared
#   make notebooks  re-execute every notebook in place from a fresh kernel (refreshes outputs)
#   make lint       ruff over the package, tests, tools, benchmarks and notebooks
#   make explore    the property tests with fresh random examples (make test's are fixed)
# CONSTRAINTS=path pins versions (CI uses .ci/constraints.txt); JOBS sets pytest-xdist workers.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CONSTRAINTS ?=
JOBS ?= 2
PIP := $(BIN)/python -m pip install --disable-pip-version-check $(if $(CONSTRAINTS),-c $(CONSTRAINTS))
STAMP := $(VENV)/.installed
# Stored outputs are produced, and compared, on the CPU with one thread per process (the same
# floating-point reduction order on any machine; xdist runs two processes) and a fixed hash seed.
RUN_ENV := COURSE_DEVICE=cpu OMP_NUM_THREADS=1 PYTHONHASHSEED=0
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))

.PHONY: setup lab test notebooks lint sync explore

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml $(CONSTRAINTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) -r requirements.txt
	$(PIP) --no-deps --no-build-isolation -e .
	$(BIN)/python -c "import matplotlib.pyplot"  # build the font cache once, not inside a notebook
	touch $@

lab: $(STAMP)
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir="$(CURDIR)" \
		--LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb \
		$(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

test: $(STAMP)
	$(RUN_ENV) $(BIN)/python -m pytest -n $(JOBS) --dist loadfile tests $(NOTEBOOKS) \
		--nbval --nbval-current-env --nbval-sanitize-with nbval_sanitize.cfg

# The kernel is stopped at once when the last cell is done (a graceful shutdown waits ~2 s more
# once torch has loaded its compiler stack); the outputs are complete by then.
notebooks: $(STAMP)
	$(RUN_ENV) $(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.kernel_name=python3 --ExecutePreprocessor.timeout=600 \
		--ExecutePreprocessor.shutdown_kernel=immediate $(if $(NB),$(NB),$(NOTEBOOKS))

explore: $(STAMP)
	HYPOTHESIS_PROFILE=explore $(RUN_ENV) $(BIN)/python -m pytest -n $(JOBS) \
		$(shell grep -l "^from hypothesis" tests/test_*.py)

lint: $(STAMP)
	$(BIN)/ruff check course_utils tests tools benchmarks notebooks

sync: $(STAMP)
	$(BIN)/python tools/notebooks.py sync
