# dphist: one-command set-up.  `make demo` and `make test` work on a fresh clone.
PYTHON  ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
# every plugin distribution under plugins/ (folders starting with _ are templates)
PLUGIN_DIRS  := $(filter-out plugins/_%,$(patsubst %/pyproject.toml,%,$(wildcard plugins/*/pyproject.toml)))
PLUGIN_TESTS := $(wildcard $(addsuffix /tests,$(PLUGIN_DIRS)))
NOTEBOOKS    := $(wildcard notebooks/*.ipynb)

.PHONY: install dev demo test test-browser explorer bench audit clean
.PHONY: docs coursework selector

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Every editable install builds with the environment's own setuptools (--no-build-isolation): pip would
# otherwise make a fresh build environment, and install setuptools into it, for each of the 17 distributions
# and again for every later `pip install -e .[extra]`.  The build backend is installed first (its version
# is every pyproject's build-system requirement).
PIP_E := $(BIN)/python -m pip install -q --no-build-isolation

$(VENV)/.installed: $(BIN)/python pyproject.toml $(addsuffix /pyproject.toml,$(PLUGIN_DIRS))
	$(BIN)/python -m pip install -q 'setuptools>=77'
	$(PIP_E) -e . $(addprefix -e ,$(PLUGIN_DIRS))
	@# numba's kernels compiled once into the per-user cache (~/.cache/dphist/numba, or NUMBA_CACHE_DIR):
	@# the first `dphist run` then loads them instead of compiling (README "Speed")
	$(BIN)/dphist warm
	touch $@

$(VENV)/.dev: $(VENV)/.installed
	$(PIP_E) -e '.[dev,docs,coursework]'
	@# the Citation File Format schema, for tests/test_project.py: cffconvert ships it but pins jsonschema<4,
	@# which the Jupyter stack above cannot share, so only its files are installed (its CLI is not used)
	$(BIN)/python -m pip install -q --no-deps 'cffconvert==2.0.0'
	touch $@

install: $(VENV)/.installed
dev: $(VENV)/.dev

demo: install
	$(BIN)/dphist demo

# one pytest worker per core (pytest-xdist; each on one thread: the dynamic programs' threads would only
# contend with the other worker); --dist loadfile keeps a file, and so every cell of a notebook,
# on one worker, in order
test: dev
	DPHIST_STRICT_PLUGINS=1 OPENBLAS_NUM_THREADS=1 DPHIST_THREADS=1 $(BIN)/python -m pytest -q -n auto --dist loadfile \
		tests $(PLUGIN_TESTS) --nbval-lax $(NOTEBOOKS)

# The explorer served by Voila, opened in the system's headless Chromium (Debian package; Playwright is told
# its path, it never downloads a browser).  apt-get needs root, as on CI; elsewhere install chromium first.
$(VENV)/.browser: $(VENV)/.dev
	$(PIP_E) -e '.[browser]'
	touch $@

test-browser: $(VENV)/.browser
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-dejavu-core; }
	DPHIST_STRICT_PLUGINS=1 OPENBLAS_NUM_THREADS=1 $(BIN)/python -m pytest -q -s tests/browser

# the explorer as a web page on http://127.0.0.1:8866/.  Voila runs in apps/ so that it reads apps/voila.json:
# each page view has its own kernel, shut down when the page closes (Voila's beforeunload beacon); a kernel
# whose page vanished without closing (a crashed tab) is culled after 10 idle minutes
explorer: $(VENV)/.browser
	cd apps && ../$(BIN)/voila explorer.ipynb --Voila.ip=127.0.0.1

bench: dev
	$(BIN)/python benchmarks/run.py

# the auto preset's selector: the training sweep on public data (results/selector-training, resumed), one
# regret tree per workload and its public skip rule, written to toolkit/dphist/selection/auto-1d.json (needs DPHIST_SHARED's DPBench
# sources; about 40 minutes on two busy cores; each workload's feature share, train.SHARES_1D, stored in the model);
# then the held-out evaluation, notebooks/data/selection-heldout.csv; the 16-trial held-out runs against the
# oracle at share 0.1 for every workload (selection-oracle.csv) and at the model's shares (selection-oracle-shares.csv,
# the candidates' cells reused; about 5 minutes each);
# then the same for grids: the 2-D sweep (results/selector-training-2d, about 2 minutes on two cores) ->
# auto-2d.json, and its held-out evaluation (about 2 minutes), notebooks/data/selection-2d-heldout.csv
# the reference data beside the repository (or DPHIST_SHARED): the library never looks for it itself
SHARED     ?= $(or $(DPHIST_SHARED),../shared)
DPBENCH_1D := $(SHARED)/datasets/peer-dpbench/1D
DPBENCH_2D := $(SHARED)/datasets/peer-dpbench/2D

selector: dev
	OPENBLAS_NUM_THREADS=1 $(BIN)/python -m dphist.selection.train --data-dir $(DPBENCH_1D)
	OPENBLAS_NUM_THREADS=1 $(BIN)/python benchmarks/selector_eval.py --data-dir $(DPBENCH_1D)
	OPENBLAS_NUM_THREADS=1 $(BIN)/python benchmarks/selector_oracle.py --data-dir $(DPBENCH_1D) --trials 16 --share 0.1
	OPENBLAS_NUM_THREADS=1 $(BIN)/python benchmarks/selector_oracle.py --data-dir $(DPBENCH_1D) --trials 16 \
		--out results/selector-oracle-shares --reuse results/selector-oracle/fixed/results.csv \
		--csv notebooks/data/selection-oracle-shares.csv
	OPENBLAS_NUM_THREADS=1 $(BIN)/python -m dphist.selection.train --dims 2 --data-dir $(DPBENCH_2D)
	OPENBLAS_NUM_THREADS=1 $(BIN)/python benchmarks/selector_eval_2d.py --data-dir $(DPBENCH_2D)

# the full privacy audit of every preset (AUDIT.md), then the false-alarm count on correct mechanisms
audit: install
	OPENBLAS_NUM_THREADS=1 $(BIN)/dphist audit --all --seed 2026 --output audit-report --table AUDIT.md --force
	OPENBLAS_NUM_THREADS=1 $(BIN)/python -m dphist.audit.alarms --audits 50 --append AUDIT.md identity H

clean:
	rm -rf $(VENV) report test-artifacts audit-report

# documentation site: Sphinx + myst-nb over README, ARCHITECTURE, the notebooks' committed outputs
# and the API reference; warnings are errors (tests/test_docs.py builds it too, under make test)
docs: dev
	$(BIN)/python -m sphinx -b html -c docs -W --keep-going -q . docs/_build/html
	@echo "docs: open docs/_build/html/index.html"

# coursework: student versions (committed in notebooks/coursework/student/) and autograder zips
# (notebooks/coursework/dist/, not committed) from each instructor notebook, with Otter-Grader;
# otter assign also runs every test against the instructor's solutions
coursework: dev
	$(BIN)/python notebooks/coursework/release.py
