# Transformer Math — every target does its own set-up (a .venv in this folder), idempotently.
#   make setup      the .venv: requirements.txt, then course_utils in editable mode
#   make lab        JupyterLab on the course (127.0.0.1, token authentication on)
#   make test       everything CI runs: `make fast`, the notebooks again at a lower SIMD level,
#                   and `make colab` (CI: `make test CONSTRAINTS=.ci/constraints.txt`, in .ci/run)
#   make fast       day-to-day: the unit tests and every notebook executed by nbval, outputs
#                   compared (the site's browser test included; no Colab-like run)
#   make colab      every notebook run as on Colab, in .venv-colab (`make colab-env` builds it:
#                   Colab's Python 3.13 and packages, about 3 GB to download)
#   make notebooks  re-execute every notebook in place from a fresh kernel (NB=path for one)
#   make sync       rewrite every notebook's setup cell and metadata from tools/notebooks.py
#   make site       the course as a static website in build/site, from the stored outputs (offline)
#   make lint       ruff over the package, tests, tools, benchmarks and notebooks; mypy over
#                   the package
#   make explore    the property tests with fresh random examples (make test's are fixed)
#   make glossary   notebooks/glossary.md from the concept registry notebooks/concepts.toml
#   make gpu-check  on a CUDA machine: GPU tests, notebook 17 and the benchmark on the GPU
# CONSTRAINTS=path pins versions (CI uses .ci/constraints.txt, whose torch==2.13.0 is the CPU
# build: CI's machines have it in their local package cache, and PyPI's plain `torch` would pull
# the CUDA build); JOBS sets pytest-xdist workers.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CONSTRAINTS ?=
JOBS ?= 2
PIP := $(BIN)/python -m pip install --disable-pip-version-check $(if $(CONSTRAINTS),-c $(CONSTRAINTS))
STAMP := $(VENV)/.installed
# Stored outputs are produced, and compared, on the CPU with one thread per process (the same
# floating-point reduction order on any machine; xdist runs two processes) and a fixed hash seed;
# progress bars are plain text that stores cleanly (course_utils.training).
RUN_ENV := COURSE_DEVICE=cpu OMP_NUM_THREADS=1 PYTHONHASHSEED=0 COURSE_STORED_OUTPUTS=1
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with nbval_sanitize.cfg
# Float results differ in the last bits between SIMD levels (AVX-512, AVX2, SSE): the stored
# outputs must not. The second pass runs NumPy, PyTorch and MKL at baseline x86-64 (SSE4.2).
LOW_SIMD := NPY_DISABLE_CPU_FEATURES="X86_V3,X86_V4,AVX512_ICL,AVX512_SPR" \
	ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=SSE4_2
# The Colab-like environment: Colab's Python (3.13; this machine's default if none) and packages.
COLAB_VENV := .venv-colab
COLAB_STAMP := $(COLAB_VENV)/.installed
COLAB_REQUIREMENTS := tests/colab/requirements.txt
COLAB_PYTHON_VERSION := 3.13
COLAB_BASE_PYTHON ?= $(shell tools/find_python.sh $(COLAB_PYTHON_VERSION))

.PHONY: setup colab-env site-deps site lab test fast colab notebooks lint sync glossary explore \
	gpu-check

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml $(CONSTRAINTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) -r requirements.txt
	$(PIP) --no-deps --no-build-isolation -e .
	$(BIN)/python -c "import matplotlib.pyplot"  # build the font cache once, not inside a notebook
	touch $@

colab-env: $(COLAB_STAMP)

$(COLAB_STAMP): $(COLAB_REQUIREMENTS)
	@test -n "$(COLAB_BASE_PYTHON)" || { echo "make colab-env needs Python $(COLAB_PYTHON_VERSION)" \
		"(Colab's): none found on PATH or in pyenv; set COLAB_BASE_PYTHON=/path/to/python3.13"; \
		exit 1; }
	$(COLAB_BASE_PYTHON) -c "import sys; assert sys.version_info[:2] == (3, 13), sys.version"
	rm -rf $(COLAB_VENV)
	$(COLAB_BASE_PYTHON) -m venv $(COLAB_VENV)
	$(COLAB_VENV)/bin/python -m pip install -q --disable-pip-version-check -r $(COLAB_REQUIREMENTS)
	$(COLAB_VENV)/bin/python -m pip uninstall -q -y triton  # not on Colab's CPU runtime
	touch $@

# The website's MathJax, from the npm registry (versions locked in site/package-lock.json).
SITE_STAMP := site/node_modules/.installed

site-deps: $(SITE_STAMP)

$(SITE_STAMP): site/package.json site/package-lock.json
	cd site && npm ci --no-audit --no-fund --loglevel=error
	touch $@

site: $(STAMP) $(SITE_STAMP)
	$(BIN)/python tools/site.py

lab: $(STAMP)
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir="$(CURDIR)" \
		--LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb \
		$(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

# Three runs: the unit tests and every notebook (nbval keeps a notebook's cells on one worker:
# --dist loadfile); the notebooks again at a lower SIMD level; every notebook on the Colab-like
# runtime (one test per notebook, spread over the workers).
test: fast colab-env
	$(RUN_ENV) $(LOW_SIMD) $(BIN)/python -m pytest -n $(JOBS) --dist loadfile $(NOTEBOOKS) $(NBVAL)
	$(MAKE) colab

fast: $(STAMP) $(SITE_STAMP)
	$(RUN_ENV) $(BIN)/python -m pytest -n $(JOBS) --dist loadfile tests $(NOTEBOOKS) $(NBVAL) \
		--ignore tests/test_colab_notebooks.py

colab: $(STAMP) $(COLAB_STAMP)
	COLAB_PYTHON=$(CURDIR)/$(COLAB_VENV)/bin/python $(BIN)/python -m pytest -n $(JOBS) \
		tests/test_colab_notebooks.py

# The kernel is stopped at once when the last cell is done (a graceful shutdown waits ~2 s more
# once torch has loaded its compiler stack); the outputs are complete by then.
notebooks: $(STAMP)
	$(RUN_ENV) $(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.kernel_name=python3 --ExecutePreprocessor.timeout=600 \
		--ExecutePreprocessor.shutdown_kernel=immediate $(if $(NB),$(NB),$(NOTEBOOKS))

explore: $(STAMP)
	HYPOTHESIS_PROFILE=explore $(RUN_ENV) $(BIN)/python -m pytest -n $(JOBS) \
		$(shell grep -l "^from hypothesis" tests/test_*.py)

gpu-check: $(STAMP)
	$(BIN)/python tools/gpu_check.py

lint: $(STAMP)
	$(BIN)/ruff check course_utils tests tools benchmarks notebooks
	$(BIN)/mypy

sync: $(STAMP)
	$(BIN)/python tools/notebooks.py sync

glossary: $(STAMP)
	$(BIN)/python tools/prerequisites.py glossary
