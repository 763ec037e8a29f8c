"""bench/RESULTS.md, where every benchmark appends its section: the one writer of that file (stdlib only, so
the peers' venvs can import it too), and `publish`, which keeps machine paths out of a section first.

Sections are appended under an exclusive file lock and never rewritten; a new file starts with HEADER. The
History index and Current figures at the top of bench/RESULTS.md are kept by hand.
"""

import fcntl
import os

RESULTS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS.md")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = ("# Benchmark results\n\n"
          "Each section: the command, the machine, the numbers. Appended by the bench scripts.\n")


def append_results(text, path=RESULTS_FILE):
    """Appends `text` (a Markdown section) to `path` under an exclusive lock, HEADER first if it is new."""
    with open(path, "a", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        if f.tell() == 0:
            f.write(HEADER)
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
        fcntl.flock(f, fcntl.LOCK_UN)


def publish(text, results_file, work_dir):
    """Prints `text` and appends it to `results_file` (unless None), with the machine's paths replaced: `work_dir`
    by $WORK_DIR, the repository root by nothing, the home directory by ~ (error messages name files)."""
    for path, placeholder in ((work_dir, "$WORK_DIR"), (ROOT + os.sep, ""), (os.path.expanduser("~"), "~")):
        text = text.replace(path, placeholder)
    if results_file:
        append_results(text, results_file)
    print(text)
