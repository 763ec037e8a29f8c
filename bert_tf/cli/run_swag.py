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
"""

import functools
import os

from absl import flags

from bert_tf import run_directory
from bert_tf.cli import finetuning_flags, scripting, training_flags
from bert_tf.data.tasks import multiple_choice
from bert_tf.evaluation import glue_metrics
from bert_tf.evaluation.probabilities import softmax
from bert_tf.feature_schema import LABEL_IDS
from bert_tf.modeling.tasks.multiple_choice import BertMultipleChoice
from bert_tf.training import finetuning_run

FLAGS = flags.FLAGS
flags.adopt_module_key_flags(finetuning_flags)  # its flags in --help, not only in --helpfull
flags.mark_flag_as_required("data_dir")
FILES = {"train": "train.csv", "dev": "val.csv", "test": "test.csv"}


@functools.cache  # read once, also when the dev set is evaluated at every checkpoint
def features_of(split, tokenizer):
    examples = multiple_choice.read_swag(os.path.join(FLAGS.data_dir, FILES[split]), split)
    return multiple_choice.convert_examples(examples, FLAGS.max_seq_length, tokenizer)


def evaluate(tuner, tokenizer):
    """eval_results.txt's dict for the dev set (val.csv): eval_accuracy, eval_loss."""
    features = features_of("dev", tokenizer)
    logits = tuner.predict(features, FLAGS.eval_batch_size)
    results = glue_metrics.logits_results(logits, features[LABEL_IDS])
    return {"eval_accuracy": results["accuracy"], "eval_loss": results["loss"], "loss": results["loss"],
            "global_step": tuner.global_step}


def main(_):
    strategy, options, tokenizer = finetuning_flags.setup(segments=2)  # context and ending
    tuner = finetuning_run.create_finetuner(options, strategy, lambda: BertMultipleChoice(
        options.config, **finetuning_flags.head_options()))
    if FLAGS.do_train:
        finetuning_run.train(tuner, options, features_of("train", tokenizer), lambda: evaluate(tuner, tokenizer))
    if FLAGS.do_eval:
        training_flags.write_results(evaluate(tuner, tokenizer))
    if FLAGS.do_predict:
        probabilities = softmax(tuner.predict(features_of("test", tokenizer), FLAGS.predict_batch_size))
        run_directory.write_test_results(FLAGS.output_dir, probabilities)


def console():
    """The command (see the module docstring): absl parses the flags and runs main."""
    scripting.run(main)


if __name__ == "__main__":
    console()
