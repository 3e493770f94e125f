"""`python -m graphguard ...` is the same as the `graphguard` command."""
import sys

from .cli import main

sys.exit(main())
