"""Read-only views of the world; each probe returns plain dataclasses and changes nothing."""
