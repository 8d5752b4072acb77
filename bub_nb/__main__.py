"""``python -m bub_nb``: the ``bub-nb`` command."""

from bub_nb.cli import main

raise SystemExit(main())
