import sys

from dexter.cli.main import main

sys.exit(main())
