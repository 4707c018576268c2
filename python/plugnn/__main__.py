"""`python -m plugnn ...` is the `plugnn` command."""

import sys

from plugnn.cli import main

sys.exit(main())
