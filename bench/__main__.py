"""``python -m bench``: run the performance suite (``python -m bench --help``)."""

from __future__ import annotations

import sys

from .run import main

sys.exit(main())
