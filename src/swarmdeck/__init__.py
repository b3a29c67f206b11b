"""swarmdeck: a terminal control room for machines that run swarms of coding agents."""

__version__ = "0.1.0"
