pytest -q
