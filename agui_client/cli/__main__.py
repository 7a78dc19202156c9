"""``python -m agui_client.cli``: the same as the ``agui`` command."""

from __future__ import annotations

import sys

from . import main

sys.exit(main())
