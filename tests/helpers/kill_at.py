"""Runs a script and SIGKILLs it at a chosen moment: `python tests/helpers/kill_at.py MOMENT script.py --flags...`.

The moment is `KIND:ARGUMENT:N`, the N-th time (default 1) the event happens in this process:
  before_replace:SUFFIX   before os.replace publishes a file whose new name ends with SUFFIX
  after_replace:SUFFIX    right after it
  checkpoint_written:     right after tf.train.Checkpoint.write returns (a bundle under its temporary name)
  export_written:         right after formats/tensor_bundle.write_bundle returns (a name-based bundle under its
                          temporary name: model.ckpt-N, and on JAX also the training state)
  evaluate:               when loop.Trainer.evaluate starts (pretraining's evaluation)
  predict:                when FineTuner.predict starts (a fine-tuning dev evaluation)
  exchanged:              right after swap_directory's atomic exchange (best/ replaced, the old one not removed)
  moved_aside:            with the exchange unavailable, right after swap_directory moved the old folder aside
The kill is a real SIGKILL of this process: no handler, no cleanup, as an OOM killer or a preempted VM. With
the environment variable of `without_tensorflow.VARIABLE` set, TensorFlow cannot be imported in it.
"""

import os
import runpy
import signal
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VARIABLE = "BERT_TF_TEST_WITHOUT_TENSORFLOW"  # without_tensorflow.py's (this file runs as a script: no import)


def _kill():
    sys.stdout.flush()
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def _counting(n, matches=lambda *args: True):
    """A function that returns True on the n-th call whose arguments `matches`."""
    count = [0]

    def hit(*args):
        if matches(*args):
            count[0] += 1
            return count[0] == n
        return False

    return hit


def _wrap(owner, name, hit, after=False):
    """Replaces owner.name by a wrapper that kills before (or after) the call that `hit` picks."""
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        if not after and hit(*args):
            _kill()
        result = original(*args, **kwargs)
        if after and hit(*args):
            _kill()
        return result

    setattr(owner, name, wrapper)


def install(moment):
    kind, _, rest = moment.partition(":")
    argument, _, n = rest.rpartition(":") if rest.count(":") else (rest, "", "")
    n = int(n) if n else 1
    from bert_tf import atomic_io
    from bert_tf.formats import tensor_bundle
    from bert_tf.training import finetuning, loop

    if kind in ("before_replace", "after_replace"):
        _wrap(os, "replace", _counting(n, lambda src, dst: os.fspath(dst).endswith(argument)),
              after=kind == "after_replace")
    elif kind == "checkpoint_written":
        import tensorflow as tf

        _wrap(tf.train.Checkpoint, "write", _counting(n), after=True)
    elif kind == "export_written":
        _wrap(tensor_bundle, "write_bundle", _counting(n), after=True)
    elif kind == "evaluate":
        _wrap(loop.Trainer, "evaluate", _counting(n))
    elif kind == "predict":
        _wrap(finetuning.FineTuner, "predict", _counting(n))
    elif kind == "exchanged":
        _wrap(atomic_io, "_exchange", _counting(n), after=True)
    elif kind == "moved_aside":
        atomic_io._exchange = lambda a, b: False
        _wrap(os, "replace", _counting(n, lambda src, dst: os.fspath(dst).endswith(atomic_io._PREVIOUS)),
              after=True)
    else:
        raise SystemExit(f"unknown moment {moment!r}")


if __name__ == "__main__":
    moment, script = sys.argv[1], sys.argv[2]
    sys.argv = [script] + sys.argv[3:]
    sys.path.insert(0, ROOT)
    if os.environ.get(VARIABLE):
        sys.modules["tensorflow"] = None
    install(moment)
    runpy.run_path(script, run_name="__main__")
