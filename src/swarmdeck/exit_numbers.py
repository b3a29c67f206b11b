"""The numbers of swarmdeck's exit codes, as plain ints: their one home.

`swarmdeck.exitcodes.ExitCode` names them as an IntEnum built from these. A caged run starts on
every agent command and uses the numbers only, and building an enum class (with the enum module
and what it pulls) costs it some 2 ms, so the run path reads them here. Each number's meaning is
documented on its ExitCode member.
"""

OK = 0
REFUSED = 78
CANNOT_EXECUTE = 126
NOT_FOUND = 127
TERMINAL_GONE = 129
READER_GONE = 141
NEVER_FITS_ANY_HOST = 241
MOVED = 242
LONG_JOB_SINGLE_HOST = 244
GPU_OUT_OF_MEMORY = 245
OWN_CAP = 250
USAGE = 251
NOT_ADMITTED = 252
TIMED_OUT = 253
SLICE_FULL = 254
LOST = 255
