# Two commands for a fresh machine with python3 and make: `make run` and `make test`.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-fast test-v2 lint compile clean demo pictures browser-picture snapshots claude-code install-user

# The venv's own setuptools goes: the package builds in pip's isolated environment, and its
# distutils-precedence.pth imports a module at every interpreter start, every hook's included.
$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip uninstall --quiet --yes setuptools

# Reinstall only when pyproject.toml or the pinned versions change.
$(STAMP): pyproject.toml constraints.txt | $(PY)
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test]'
	touch $(STAMP)

# Bytecode is compiled up front: hooks and runners start on every agent command, and an
# environment with PYTHONDONTWRITEBYTECODE would otherwise recompile swarmdeck each time.
compile: $(STAMP)
	$(PY) -m compileall -q src

run: compile
	$(VENV)/bin/swarmdeck ui

# `swarmdeck` on the user's PATH: a link in ~/.local/bin to this checkout's console script.
# Made again harmlessly; a file there that is not a link is the user's and is left alone.
BIN := $(HOME)/.local/bin
install-user: compile
	@mkdir -p '$(BIN)'
	@if [ -e '$(BIN)/swarmdeck' ] && [ ! -L '$(BIN)/swarmdeck' ]; then \
		echo "make install-user: $(BIN)/swarmdeck is a file of yours, not a link; move it aside and run this again" >&2; \
		exit 1; fi
	@ln -sfn '$(CURDIR)/$(VENV)/bin/swarmdeck' '$(BIN)/swarmdeck'
	@echo "linked $(BIN)/swarmdeck -> $(CURDIR)/$(VENV)/bin/swarmdeck"
	@case ":$$PATH:" in *":$(BIN):"*) ;; *) \
		echo "$(BIN) is not on your PATH: add  export PATH=\"$(BIN):\$$PATH\"  to your shell's rc file";; esac

# The control room on a self-contained scene; quitting removes it.
demo: compile
	$(VENV)/bin/swarmdeck demo

# The README's first picture, drawn by Textual from the demo scene, and its browser picture (the
# others: `make snapshots`).
pictures: compile browser-picture
	$(PY) docs/make_pictures.py

# The README's picture of `swarmdeck serve`: Debian's chromium (.ci/run installs it) opens the
# demo scene served, and Chromium's screenshot is kept.
browser-picture: compile
	$(PY) docs/make_browser_picture.py

# The snapshot tests' pictures on fixed probe data (tests/app/fixed_room.py): accept the current
# screens as their references and copy the README's (main screen, approve modal, details) next to
# the demo's.
SHOTS := tests/app/__snapshots__/test_pictures
snapshots: compile
	$(PY) -m pytest -q tests/app/test_pictures.py --snapshot-update
	mkdir -p docs/pictures
	cp '$(SHOTS)/test_main_screen[120x35].svg' docs/pictures/main-120x35.svg
	cp '$(SHOTS)/test_main_screen[200x60].svg' docs/pictures/main-200x60.svg
	cp '$(SHOTS)/test_short_screen[80x24].svg' docs/pictures/short-80x24.svg
	cp '$(SHOTS)/test_views[release_lock_modal-keys4].svg' docs/pictures/release-lock.svg
	cp '$(SHOTS)/test_views[job_detail-keys1].svg' docs/pictures/job-detail.svg
	cp '$(SHOTS)/test_views[host_detail-keys5].svg' docs/pictures/host-detail.svg
	cp '$(SHOTS)/test_watched_views[approve_modal-keys0].svg' docs/pictures/approve.svg
	cp '$(SHOTS)/test_watched_views[migrate_modal-keys1].svg' docs/pictures/migrate.svg

# The real Claude Code for tests/claude_real, at the version pinned there: its native binary from
# the npm registry (no install scripts run; the tests call the binary itself).
CLAUDE_CODE_VERSION := $(shell cat tests/claude_real/claude-code-version)
CLAUDE_CODE := .cache/claude-code/node_modules/@anthropic-ai/claude-code-linux-x64/claude
claude-code: $(CLAUDE_CODE)
$(CLAUDE_CODE): tests/claude_real/claude-code-version
	mkdir -p .cache/claude-code
	npm install --prefix .cache/claude-code --no-audit --no-fund --ignore-scripts --no-save \
		@anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION)
	test -x $@ && touch $@

lint: $(STAMP)
	$(VENV)/bin/ruff check .

# The suite runs in three workers (pytest-xdist): most of its time is spent waiting on real
# processes, cages, ssh servers and the Slurm daemons, so three keep two cores busy. The Slurm
# tests share one worker (the machine has room for one test cluster). `TEST_WORKERS=0 make test`
# runs it in one process.
TEST_WORKERS ?= 3
test: lint compile
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

# The unit tier, for the edit-test loop: the top-level tests and those of the hooks, probes and
# views, in two workers; no SSH servers, Slurm, real Claude Code, qemu guests or Pilot pictures,
# none of the fuzzers and race tests that take a minute alone, and not the usage probe's busy jobs,
# which burn cores for seconds (FAST_LEAVES_OUT). `make test` runs everything.
FAST_LEAVES_OUT := tests/probes/test_peer.py tests/test_hook_events.py tests/test_config_fuzz.py \
	tests/hooks/test_hook_fuzz.py tests/probes/test_usage.py tests/test_state_ledger_identity.py
FAST_TESTS := $(filter-out $(FAST_LEAVES_OUT),$(wildcard tests/test_*.py)) tests/hooks tests/probes \
	tests/views
test-fast: lint compile
	$(PY) -m pytest -q -n 2 $(FAST_TESTS) $(addprefix --ignore=,$(FAST_LEAVES_OUT))

# The cgroup v2 tier (tests_v2/, README "Requirements"): qemu guests on this machine's Debian
# kernel run the cages on a real cgroup v2 kernel, one boot per guest. virtme-ng boots the first
# and lives in a venv of the tier's own, never among the project's dependencies; the systemd
# guest's root file system is made once with debootstrap and kept in .cache/. Where the guests
# cannot be had (no qemu, kernel image or registry) the tier is skipped with one line.
VNG_VENV := .cache/vng
VNG_VERSION := 1.42
$(VNG_VENV)/bin/vng:
	python3 -m venv $(VNG_VENV)
	$(VNG_VENV)/bin/pip install --quiet --disable-pip-version-check virtme-ng==$(VNG_VERSION) \
		>/dev/null 2>&1 || rm -rf $(VNG_VENV)

test-v2: compile $(VNG_VENV)/bin/vng
	$(PY) tests_v2/boot.py

clean:
	rm -rf $(VENV) .pytest_cache build src/*.egg-info
