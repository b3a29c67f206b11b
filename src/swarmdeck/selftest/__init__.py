"""`swarmdeck selftest`: proof, on the machine it runs on, that each guard holds and can fail.

Every cell runs real `swarmdeck` processes in a sandbox of its own (sandbox.py); the cells are
registered in cells.py, each with the break switches (breaks.py) that must turn it red;
table.py runs them, clean and once per switch, and prints what held.
"""
