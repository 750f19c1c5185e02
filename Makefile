# The book's two commands: `make book` builds the HTML book, `make test` runs every test.
# Both create .venv, install the pinned requirements and physai into it, and use nothing else.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# Offline copy of MuJoCo Menagerie beside the repository, when there is one.
ifneq ($(wildcard ../shared/menagerie),)
export MENAGERIE_ROOT ?= $(abspath ../shared/menagerie)
endif

.PHONY: book pdf pdf-debs wheel test test-newest clean

# The site's JavaScript dependency (MuJoCo's WebAssembly build for the live panels), pinned in package-lock.json.
NPM := $(shell command -v npm 2>/dev/null)
node_modules/.package-lock.json: package.json package-lock.json
ifeq ($(NPM),)
	@echo "make: npm not found: the book's live panels need Node.js and npm (npm ci fetches MuJoCo's WebAssembly build)"; exit 1
else
	$(NPM) ci --no-audit --no-fund
endif

# The environment sits inside the repository, whose package.json says "type": "module": the package.json written into
# it keeps Node from reading JupyterLab's CommonJS scripts in it as ES modules (they failed at every server start).
$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	echo '{"type": "commonjs"}' > $(VENV)/package.json
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

# The build executes nothing (execute_notebooks: off): it shows the outputs stored in the notebooks, which
# `pytest --nbval` re-executes and compares. -W -n --keep-going: any warning or broken reference fails the build.
book: $(STAMP) node_modules/.package-lock.json
	$(BIN)/jupyter-book build --all -W -n --keep-going .

# The PDF edition, _build/latex/simulated-actuators.pdf: the same pages through Jupyter Book's LaTeX builder and XeLaTeX
# (book/_ext/physai_pdf.py: each live panel as its first view, its link and a QR code; tables as tables; the folded
# answers at the end of each chapter). TeX comes from Debian's packages, installed here with apt-get when missing (as
# root, else with sudo), as is Chromium, which draws the panels' first views. physai.book.pdf --check-log then fails on
# any line set wider than the page (an Overfull \hbox beyond physai.book.pdf.OVERFULL_PT).
PDF_DEBS := texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended texlive-xetex latexmk poppler-utils \
            fonts-freefont-otf chromium
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
PDF := _build/latex/simulated-actuators.pdf
pdf-debs:
	@missing=; for deb in $(PDF_DEBS); do dpkg -s $$deb >/dev/null 2>&1 || missing="$$missing $$deb"; done; \
	if [ -n "$$missing" ]; then echo "make pdf: installing$$missing"; \
	    $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends$$missing >/dev/null; fi

pdf: $(STAMP) node_modules/.package-lock.json pdf-debs
	$(BIN)/python -m physai.book.pdf panels
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/jupyter-book build --all -W -n --keep-going --builder pdflatex .
	$(BIN)/python -m physai.book.pdf check-log _build/latex/simulated-actuators.log

# physai's wheel with the panel widget's bundled front end (generated, not committed) inside: what a release attaches
# for pip and Colab users, who have no Node (physai.book.wheel; CHANGELOG.md's "Making a release").
wheel: $(STAMP) node_modules/.package-lock.json
	$(BIN)/python -m physai.book.wheel dist

# The panel widget's front end (physai.interface.widget), bundled from the page's modules (physai.book.widget_bundle;
# generated, not committed): the chapters' panel cells make the widget, which needs it.
WIDGET_FRONT_END := physai/interface/static/panels.js
$(WIDGET_FRONT_END): $(STAMP) node_modules/.package-lock.json $(wildcard book/_static/panels/*.js) book/_static/physai.css \
                     physai/book/widget_bundle.py
	$(BIN)/python -m physai.book.widget_bundle

# The notebooks run twice: as stored, and with every simulation's start nudged by 1e-12 rad (physai.engine.perturb), which
# moves the last bits the way another processor would; the stored outputs must survive both.
NBVAL := $(BIN)/python -m pytest --nbval notebooks --nbval-sanitize-with notebooks/nbval_sanitize.cfg -p no:cacheprovider

# lint-imports: physai's layer contract (pyproject.toml [tool.importlinter]); then five jobs, two at a time (most of
# each is one thread, and the machines here have two cores), the longest first: physai's tests in two halves (the
# published book's (the site in Chromium and the Colab edition: one site build, one Chromium) and the others), the
# chapters, the benchmarks' quick
# modes, the PDF edition (test-pdf, after test-site in one job: the HTML and LaTeX builds share _build's doctrees and
# must not run at once). -O prints each job's output whole when it ends; each ends with a line "[time] NAME: wall,
# CPU" (.ci/timed.py).
TIMED := $(PYTHON) .ci/timed.py
test: $(STAMP) node_modules/.package-lock.json
	$(TIMED) lint-imports $(BIN)/lint-imports --no-cache
	$(BIN)/python -m physai.book.widget_bundle
	$(MAKE) --no-print-directory -j2 -O test-others test-site-then-pdf test-chapters test-benchmarks

test-site-then-pdf: $(STAMP) node_modules/.package-lock.json
	$(MAKE) --no-print-directory test-site
	$(MAKE) --no-print-directory test-pdf

# All of physai's tests in one process; make test runs the same tests as test-site and test-others.
.PHONY: test-physai test-site test-others test-chapters test-benchmarks quick-benchmarks test-pdf test-site-then-pdf
test-physai: $(STAMP) node_modules/.package-lock.json
	$(BIN)/python -m pytest tests

# The tests marked site (tests/conftest.py: those that open pages or read the built book, and the Colab edition's,
# whose fake-Colab runs execute the chapters), and all the others.
test-site: $(STAMP) node_modules/.package-lock.json $(WIDGET_FRONT_END)
	$(TIMED) 'pytest -m site' $(BIN)/python -m pytest tests -m site

test-others: $(STAMP) node_modules/.package-lock.json
	$(TIMED) 'pytest -m "not site and not pdf"' $(BIN)/python -m pytest tests -m 'not site and not pdf'

# The PDF edition built (make pdf) and checked (tests/test_pdf.py, marked pdf: every chapter of _toc.yml, every figure,
# each chapter's glued numbers, the answers at each chapter's end, one page per chapter rendered to _build/pdf-pages).
test-pdf: $(STAMP) node_modules/.package-lock.json
	$(TIMED) 'make pdf' $(MAKE) --no-print-directory pdf
	PHYSAI_PDF_REQUIRED=1 $(TIMED) 'pytest tests/test_pdf.py' $(BIN)/python -m pytest tests/test_pdf.py

# Every benchmark (benchmarks/bench_*.py) in its quick mode, a few seconds each, so that none breaks unnoticed: each
# must exit 0, and its last line (the figures it exists to print) is shown. A benchmark without --quick fails here.
# The full runs stay manual (README). benchmarks/requirements.txt adds what only a benchmark needs (mujoco.sysid).
BENCHMARKS := $(sort $(wildcard benchmarks/bench_*.py))
$(VENV)/.benchmarks: $(STAMP) benchmarks/requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r benchmarks/requirements.txt
	touch $@

test-benchmarks: $(VENV)/.benchmarks node_modules/.package-lock.json
	@$(TIMED) 'benchmarks --quick' $(MAKE) --no-print-directory quick-benchmarks

quick-benchmarks:
	@log=$$(mktemp); failed=; for bench in $(BENCHMARKS); do start=$$(date +%s); \
	    if $(BIN)/python $$bench --quick > $$log 2>&1; then \
	        echo "$$bench --quick, $$(( $$(date +%s) - start )) s: $$(tr '\r' '\n' < $$log | grep . | tail -n 1)"; \
	    else echo "$$bench --quick FAILED:"; tail -n 30 $$log; failed="$$failed $$bench"; fi; \
	done; rm -f $$log; \
	if [ -n "$$failed" ]; then echo "benchmarks that failed in quick mode:$$failed"; exit 1; fi

test-chapters: $(STAMP) $(WIDGET_FRONT_END)
	$(TIMED) 'nbval plain' $(NBVAL)
	PHYSAI_PERTURB=1e-12 $(TIMED) 'nbval nudged' $(NBVAL)

# The same tests and notebooks against the newest MuJoCo release (not the book's pin), in an environment of its own:
# physai supports a range of MuJoCo versions (pyproject.toml) and this checks its newest end. The stored outputs
# were made with the pin, so the notebooks must still match them. MUJOCO_NEWEST is what pip installs
# (e.g. make test-newest MUJOCO_NEWEST='mujoco==4.0.0'). MuJoCo 4 splits its package (mujoco, mujoco-core,
# mujoco-studio), so the environment is made afresh rather than upgraded in place.
MUJOCO_NEWEST ?= mujoco
NEWEST := .venv-newest
NEWEST_BIN := $(NEWEST)/bin
$(NEWEST)/.installed: requirements.txt pyproject.toml
	rm -rf $(NEWEST)
	$(PYTHON) -m venv $(NEWEST)
	echo '{"type": "commonjs"}' > $(NEWEST)/package.json
	grep -v '^mujoco==' requirements.txt > $(NEWEST)/requirements.txt
	$(NEWEST_BIN)/python -m pip install --quiet --disable-pip-version-check -r $(NEWEST)/requirements.txt '$(MUJOCO_NEWEST)'
	$(NEWEST_BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $@

# With the default MUJOCO_NEWEST, an environment made before a newer release came out is made afresh: pip (from the
# package registry) names the newest release, and .venv-newest must have it.
test-newest: node_modules/.package-lock.json
	@if [ '$(MUJOCO_NEWEST)' = mujoco ]; then \
	    newest=$$($(PYTHON) -m pip index versions mujoco 2>/dev/null | sed -n '1s/^mujoco (\(.*\))$$/\1/p'); \
	    have=$$($(NEWEST_BIN)/python -c 'import mujoco; print(mujoco.__version__)' 2>/dev/null || true); \
	    if [ -n "$$newest" ] && [ "$$newest" != "$$have" ]; then \
	        echo "make test-newest: MuJoCo $$newest is the newest release, $(NEWEST) has $${have:-none}: made afresh"; \
	        rm -f $(NEWEST)/.installed; \
	    fi; \
	fi
	@$(MAKE) --no-print-directory $(NEWEST)/.installed
	@$(NEWEST_BIN)/python -c "import mujoco; print('make test-newest: MuJoCo', mujoco.__version__)"
	$(NEWEST_BIN)/python -m physai.book.widget_bundle
	$(NEWEST_BIN)/python -m pytest tests
	$(subst $(BIN)/,$(NEWEST_BIN)/,$(NBVAL))
	PHYSAI_PERTURB=1e-12 $(subst $(BIN)/,$(NEWEST_BIN)/,$(NBVAL))

clean:
	rm -rf _build $(VENV) $(NEWEST) node_modules dist
