"""``python -m bub_nb.cli``: the ``bub-nb`` command."""

from bub_nb.cli.main import main

raise SystemExit(main())
