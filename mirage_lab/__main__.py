"""``python -m mirage_lab …`` is ``mirage-lab …``."""

from mirage_lab.cli import main

raise SystemExit(main())
