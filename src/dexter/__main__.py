import sys

from dexter.cli.main import entry

sys.exit(entry())
