"""`python -m swarmdeck.cli`: how a detached runner starts itself again."""

import sys

from swarmdeck.cli import main

sys.exit(main())
