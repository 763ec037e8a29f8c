"""The flags that name a BERT model's files, defined once for every script (a command-side module: the library
outside bert_tf/cli/ never reads flags).

    import model_flags
    model_flags.define("bert_config_file", "vocab_file", "init_checkpoint", "do_lower_case")

Each script defines the ones it reads, with one meaning and one help text everywhere (the original's names
and defaults); a script marks them required itself when it has no default for them.
"""

import functools

from absl import flags

from bert_tf import configs

FLAGS = flags.FLAGS


class _ConfigFileParser(flags.ArgumentParser):
    """--bert_config_file: a path, or a size of bert_tf/configs/ (`base`) read as its bundled file's path."""

    def parse(self, argument):
        return configs.resolve(argument)

    def flag_type(self):
        return "string"

_DEFINITIONS = {
    "bert_config_file": lambda: flags.DEFINE(
        _ConfigFileParser(), "bert_config_file", None, "bert_config.json (Google) or config.json (HuggingFace) "
        f"of the model, or a bundled size: {'|'.join(configs.NAMES)}. export_model.py and convert_checkpoint.py "
        "default to the config embedded in (or beside) --init_checkpoint.", serializer=flags.ArgumentSerializer()),
    "vocab_file": lambda: flags.DEFINE_string(
        "vocab_file", None, "The vocab.txt that the BERT model was trained on."),
    "init_checkpoint": lambda: flags.DEFINE_string(
        "init_checkpoint", None, "The model's weights: a Google TF1 checkpoint prefix (bert_model.ckpt), a "
        "bert_tf checkpoint or training output_dir (its newest model.ckpt-N), or a HuggingFace directory / "
        "model.safetensors. Weights it lacks (a new task head) start from scratch and are reported."),
    "do_lower_case": lambda: flags.DEFINE_bool(
        "do_lower_case", True, "Lower-case and strip accents: True for uncased models, False for cased ones."),
    "pooling": lambda: flags.DEFINE_enum(
        "pooling", None, _pooling_modes(), "How a sentence embedding pools the tokens. Default: the "
        "sentence-transformers directory's (1_Pooling/config.json), else mean."),
    "normalize": lambda: flags.DEFINE_bool(
        "normalize", None, "L2-normalize sentence embeddings. Default: whether the sentence-transformers "
        "directory has a Normalize module, else False."),
}
NAMES = tuple(_DEFINITIONS)


def _pooling_modes():
    from bert_tf.modeling.layers.sentence_pooling import POOLING_MODES  # Keras: only for the commands that embed

    return POOLING_MODES


def define(*names):
    """Defines the model-file flags `names` (of NAMES) in the calling script's FLAGS."""
    for name in names:
        if name not in _DEFINITIONS:
            raise ValueError(f"model_flags.define({name!r}): expected one of {', '.join(NAMES)}")
        _DEFINITIONS[name]()




@functools.lru_cache(maxsize=None)
def _open(path):
    from bert_tf import checkpoints  # TensorFlow: not for the commands that never start it

    return checkpoints.open_checkpoint(path)


def init_checkpoint():
    """--init_checkpoint opened (`checkpoints.open_checkpoint`), once per command however often it is asked
    for; None without the flag."""
    return _open(FLAGS.init_checkpoint) if FLAGS.init_checkpoint else None


def check_init_checkpoint(config):
    """Before any model is built: --init_checkpoint, if given, opens and its shapes fit `config` (the
    checkpoint's index or header is read, no weights): ValueError naming the first differences otherwise."""
    from bert_tf import checkpoints  # TensorFlow: not for the commands that never start it

    if FLAGS.init_checkpoint:
        checkpoints.check_fits(config, init_checkpoint(), config_name())


def config_name():
    """What an error calls the config: `--bert_config_file=<path>`, or "its config" (the checkpoint's own)."""
    config_file = FLAGS["bert_config_file"].value
    return f"--bert_config_file={config_file}" if config_file else "its config"
