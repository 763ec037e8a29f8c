"""What every absl script shares: one clear error line instead of a traceback for bad input and for the
failures of files and disks."""

import os
import sys

from absl import app, logging

TRACEBACK_VARIABLE = "BERT_TF_TRACEBACK"  # set to 1 to see the traceback of a reported error


def _reported(error):
    """True for the errors that get one line: bad input, files and disks, TensorFlow's OpErrors."""
    tf = sys.modules.get("tensorflow")  # not imported here: scripts that never start TensorFlow don't pay for it
    return isinstance(error, (ValueError, OSError)) or (tf is not None and isinstance(error, tf.errors.OpError))


def error_line(error):
    """The one line that reports `error`: its message, TensorFlow's first line with the error's name."""
    if hasattr(error, "message") and hasattr(error, "error_code"):  # a tf.errors.OpError
        lines = (error.message or "").strip().splitlines()
        return f"TensorFlow {type(error).__name__}: {lines[0] if lines else 'no message'}"
    return " ".join(str(error).split("\n")).strip()


def run(main):
    """`absl.app.run(main)`, but a ValueError (bad flags or data), an OSError (missing or unwritable file,
    full disk) or a TensorFlow OpError (damaged or truncated file, failed write) ends the program with a
    single `Error: ...` line on stderr and exit status 1 (with BERT_TF_TRACEBACK=1 in the environment, the
    traceback is printed too); other exceptions keep their traceback (they are bugs)."""

    def guarded(argv):
        try:
            return main(argv)
        except Exception as e:
            if not _reported(e) or os.environ.get(TRACEBACK_VARIABLE) == "1":
                raise
            logging.flush()
            sys.stderr.write(f"Error: {error_line(e)}\n")
            sys.exit(1)

    app.run(guarded)
