"""A real full file system for tests: a small tmpfs mounted for the length of a `with` block. Mounting needs
root: `mounted` skips the test with NEEDS_ROOT when not run as root (CI runs as root), and with mount's own
message where root cannot mount either (a container without the right to)."""

import contextlib
import os
import shutil
import subprocess

import pytest

NEEDS_ROOT = "needs root to mount a tmpfs (run as root; CI runs as root)"


@contextlib.contextmanager
def mounted(directory, size):
    """Mounts a tmpfs of `size` (mount's syntax: "1m", "300k") on `directory` (created), yields it as a
    str, and unmounts it whatever happens; pytest.skip when it cannot be mounted."""
    if os.geteuid() != 0:
        pytest.skip(NEEDS_ROOT)
    directory = str(directory)
    os.makedirs(directory, exist_ok=True)
    if shutil.which("mount") is None:
        pytest.skip("no mount command")
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", directory],
                            capture_output=True, text=True)
    if result.returncode:
        pytest.skip(f"cannot mount a tmpfs as root: {result.stderr.strip() or result.returncode}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "--lazy", directory], check=True)


def all_files(directory):
    """Every path under `directory`, relative to it, sorted."""
    return sorted(os.path.relpath(os.path.join(root, name), directory)
                  for root, dirs, files in os.walk(directory) for name in dirs + files)
