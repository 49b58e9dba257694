"""``python -m hltm_assets.cli`` is ``hltm``."""

import sys

from hltm_assets.cli import main

sys.exit(main())
