"""What every absl script shares: one clear error line instead of a traceback for bad input."""

import sys

from absl import app, logging


def run(main):
    """`absl.app.run(main)`, but a ValueError (bad flags or data) or an OSError (missing or unwritable
    file) ends the program with a single `Error: ...` line on stderr and exit status 1; other exceptions keep
    their traceback (they are bugs)."""

    def guarded(argv):
        try:
            return main(argv)
        except (ValueError, OSError) as e:
            logging.flush()
            sys.stderr.write(f"Error: {e}\n")
            sys.exit(1)

    app.run(guarded)
