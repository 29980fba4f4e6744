"""``python -m app.adapters.pipe``: the same as the ``spamfilter-filter`` console script."""

import sys

from app.adapters.pipe.main import main

if __name__ == "__main__":
    sys.exit(main())
