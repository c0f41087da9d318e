"""``python -m meshjit``: the command-line interface."""

from .cli import main

raise SystemExit(main())
