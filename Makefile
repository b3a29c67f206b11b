# Two commands for a fresh machine with python3 and make: `make run` and `make test`.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint compile clean demo pictures

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Reinstall only when pyproject.toml changes.
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# Bytecode is compiled up front: hooks and runners start on every agent command, and an
# environment with PYTHONDONTWRITEBYTECODE would otherwise recompile swarmdeck each time.
compile: $(STAMP)
	$(PY) -m compileall -q src

run: compile
	$(VENV)/bin/swarmdeck ui

# The control room on a self-contained scene; quitting removes it.
demo: compile
	$(VENV)/bin/swarmdeck demo

# The README's pictures, drawn by Textual from the demo scene.
pictures: compile
	$(PY) docs/make_pictures.py

lint: $(STAMP)
	$(VENV)/bin/ruff check .

test: lint
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache build src/*.egg-info
