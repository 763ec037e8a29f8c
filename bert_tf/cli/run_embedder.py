"""Fine-tunes a sentence embedder on (anchor, positive) pairs with in-batch negatives (the
MultipleNegativesRankingLoss of sentence-transformers), and measures retrieval on held-out pairs.

    python run_embedder.py --task=pairs --data_dir=pairs/ --init_checkpoint=$MINILM \
      --bert_config_file=$MINILM/config.json --vocab_file=$MINILM/vocab.txt --do_train --do_eval \
      --max_seq_length=128 --train_batch_size=32 --learning_rate=2e-5 --num_train_epochs=1 \
      --output_dir=/tmp/pairs_output

--task=pairs reads train.tsv / dev.tsv (`anchor<TAB>positive`, no header) or train.jsonl / dev.jsonl
(`{"anchor", "positive"}`) in --data_dir (bert_tf/data/tasks/pairs.py); each batch's other positives are an
anchor's negatives, scored by `--scale` times the cosine. --do_eval embeds the dev anchors and positives and
ranks all dev positives for each anchor: eval_accuracy_at_1 and eval_mrr_at_10 in eval_results.txt (run it
without --do_train to measure the checkpoint as it is). The pooling and normalization come from a
sentence-transformers --init_checkpoint (or --pooling / --normalize) and are written into --output_dir as
sentence-transformers settings, so encode_sentences.py and export_model.py --model_type=embedder read them.

The flags map onto `bert_tf.training.finetuning_run.RunOptions` and `bert_tf.training.embedder_run.PairsTask`
(same names); the run is `embedder_run.run_embedder`, which a notebook calls the same way.
"""

import os

from absl import flags

from bert_tf.checkpoint_paths import checkpoint_folder
from bert_tf.cli import finetuning_flags, flag_checks, model_flags, scripting
from bert_tf.formats import sentence_transformers
from bert_tf.training.embedder_run import MODES, PairsTask, run_embedder

FLAGS = flags.FLAGS
model_flags.define("pooling", "normalize")
flags.adopt_module_key_flags(finetuning_flags)  # their flags in --help, not only in --helpfull
flags.adopt_module_key_flags(model_flags)
flags.DEFINE_enum("task", "pairs", ["pairs"], "The training data: pairs = (anchor, positive) texts, in-batch "
                  "negatives.")
flags.DEFINE_float("scale", 20.0, "The cosine similarities are multiplied by this before the softmax "
                   "(sentence-transformers' default).")
flags.mark_flag_as_required("data_dir")


def main(_):
    check_settings_not_replaced()
    strategy, options = finetuning_flags.prepare(modes=MODES)
    run_embedder(options, finetuning_flags.task_of(PairsTask), strategy,
                 config_name=model_flags.config_name())


def check_settings_not_replaced():
    """ValueError when the sentence-transformers settings that the run writes into --output_dir would replace
    those of --init_checkpoint's folder (the same folder, e.g. an evaluation of a sentence-transformers
    directory into itself: its pooling and max_seq_length would become this run's)."""
    names = (sentence_transformers.MODULES_FILE, sentence_transformers.SETTINGS_FILE)
    read = {}
    if FLAGS.init_checkpoint:
        read["init_checkpoint"] = [os.path.join(checkpoint_folder(FLAGS.init_checkpoint), name) for name in names]
    flag_checks.check_outputs_not_inputs({"output_dir": [os.path.join(FLAGS.output_dir, name) for name in names]},
                                         read)


def console():
    """The command (see the module docstring): absl parses the flags and runs main."""
    scripting.run(main)


if __name__ == "__main__":
    console()
