"""Virtual environments with pinned packages, built once per machine, for tests and benchmarks.

The export tests load SavedModels in a venv with only tensorflow + tensorflow-text (no bert_tf); the model
benchmarks run KerasHub and HF torch in a venv of their own. Neither is ever installed into this Python. The
venvs' names and pins: tools/peer_venvs.py.
"""

import fcntl
import os
import shutil
import subprocess
import venv


def build_once(directory, build):
    """Runs build(directory) unless a previous run completed it (marker file), under an exclusive file lock:
    one process (e.g. one pytest-xdist worker) builds, the others wait and reuse. Returns `directory`."""
    os.makedirs(os.path.dirname(directory), exist_ok=True)
    with open(directory + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        if not os.path.exists(os.path.join(directory, ".complete")):
            shutil.rmtree(directory, ignore_errors=True)
            os.makedirs(directory)
            build(directory)
            open(os.path.join(directory, ".complete"), "w").close()
    return directory


def pinned_venv_python(name, pins, timeout=3600, no_deps=()):
    """The python of ~/.cache/`name` (a venv with pip-installed `pins`, e.g. ["torch==2.13.0"], then the
    `no_deps` pins installed without their declared dependencies), built the first time it is asked for;
    RuntimeError with pip's message if an install fails."""
    def build(path):
        venv.EnvBuilder(with_pip=True, clear=True).create(path)
        for packages, options in ((pins, []), (list(no_deps), ["--no-deps"])):
            if not packages:
                continue
            result = subprocess.run([os.path.join(path, "bin", "python"), "-m", "pip", "install", "--quiet",
                                     "--disable-pip-version-check", *options, *packages], capture_output=True,
                                    text=True, timeout=timeout)
            if result.returncode:
                raise RuntimeError(f"cannot build the venv {path} with {' '.join(options + packages)}: "
                                   f"{result.stderr[-3000:]}")

    directory = os.path.join(os.path.expanduser("~"), ".cache", name)
    return os.path.join(build_once(directory, build), "bin", "python")
