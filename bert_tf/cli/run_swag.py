"""Fine-tunes BERT for multiple choice on SWAG (Zellers et al. 2018): one score per `[CLS] context [SEP]
ending [SEP]`, softmax over the endings (Devlin et al. 2019, section 4.4).

    python run_swag.py --data_dir=swagaf/data --vocab_file=$BERT_BASE_DIR/vocab.txt \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt \
      --do_train --do_eval --max_seq_length=80 --train_batch_size=16 --learning_rate=2e-5 \
      --num_train_epochs=3.0 --output_dir=/tmp/swag_output/

Input: SWAG's train.csv, val.csv and test.csv in --data_dir (columns sent1, sent2, ending0..3, label; the test
file has no label). The same flags as run_classifier.py otherwise. Writes to --output_dir: model.ckpt-N,
eval_results.txt (eval_accuracy, eval_loss, global_step, loss) and test_results.tsv (the probability of
each ending, one line per test example).

The flags map onto `bert_tf.training.finetuning_run.RunOptions` and `bert_tf.training.swag_run.SwagTask`; the
run is `swag_run.run_swag`, which a notebook calls the same way.
"""

from absl import flags

from bert_tf.cli import finetuning_flags, model_flags, scripting
from bert_tf.training.swag_run import SwagTask, run_swag

FLAGS = flags.FLAGS
flags.adopt_module_key_flags(finetuning_flags)  # its flags in --help, not only in --helpfull
flags.mark_flag_as_required("data_dir")


def main(_):
    strategy, options = finetuning_flags.prepare(segments=2)  # context and ending
    run_swag(options, finetuning_flags.task_of(SwagTask, head=finetuning_flags.head_options()), strategy,
             config_name=model_flags.config_name())


def console():
    """The command (see the module docstring): absl parses the flags and runs main."""
    scripting.run(main)


if __name__ == "__main__":
    console()
