import sys

from .cli import _main_piped

sys.exit(_main_piped())
