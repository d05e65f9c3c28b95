"""`python -m conformance.cli`: the `dra-conformance` command."""

import sys

from conformance.cli.app import main

sys.exit(main())
