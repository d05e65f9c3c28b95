import sys

from fakedriver.cli import main

sys.exit(main())
