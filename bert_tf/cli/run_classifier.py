"""Fine-tunes BERT for sentence(-pair) classification or regression: every GLUE task, XNLI, CLUE, your own files.

The original's flags and defaults, e.g. the google-research/bert README command runs unchanged:

    python run_classifier.py --task_name=MRPC --do_train=true --do_eval=true --data_dir=$GLUE_DIR/MRPC \
      --vocab_file=$BERT_BASE_DIR/vocab.txt --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --max_seq_length=128 --train_batch_size=32 \
      --learning_rate=2e-5 --num_train_epochs=3.0 --output_dir=/tmp/mrpc_output/

Tasks: cola, sst-2 (sst2), mrpc, sts-b (stsb, regression), qqp, mnli (matched and mismatched dev/test), qnli,
rte, wnli, ax (predict only, with an MNLI model), xnli (`--xnli_language`), the CLUE classification tasks
afqmc, tnews, iflytek, cmnli, ocnli, csl, cluewsc2020 (the JSON-lines files of CLUE's `<task>_public.zip`),
chnsenticorp (ERNIE's / PaddleNLP's TSV files), and `custom`: your own
train/dev/test .tsv/.csv/.jsonl files with `--text_a_column`, `--text_b_column`, `--label_column`,
`--id_column`, `--label_list` or `--regression`. Or, instead of --task_name, `--tfds_name=glue/mrpc` (any GLUE
config, or another TFDS set with `--text_a_column`...) reads TensorFlow Datasets into --data_dir (TFDS's
feature names and label order; needs `pip install tensorflow-datasets`). `--truncation` picks which pieces of
a long single text are kept (head, tail, head+tail).

Writes to --output_dir: model.ckpt-N (training), eval_results.txt (eval_accuracy, eval_loss, the task's GLUE
metrics such as eval_f1 / eval_mcc / eval_pearson / eval_spearman, global_step, loss; MNLI adds
eval_mismatched_*), test_results.tsv (one line of class probabilities, or the score, per test example;
MNLI's mismatched test set: test_mismatched_results.tsv) and the GLUE leaderboard file ({TASK}.tsv) or CLUE's
({task}_predict.json: a JSON line {"id": ..., "label": ...} per line of test.json; e.g. tnews11_predict.json).

The flags map onto `bert_tf.training.finetuning_run.RunOptions` and `bert_tf.training.classifier_run.ClassifierTask`
(same names); the run is `classifier_run.run_classifier`, which a notebook calls the same way.
"""

from absl import flags

from bert_tf.cli import finetuning_flags, model_flags, scripting
from bert_tf.data.tasks import classification
from bert_tf.modeling.tasks.document_classifier import AGGREGATIONS
from bert_tf.training.classifier_run import ClassifierTask, run_classifier

FLAGS = flags.FLAGS
flags.adopt_module_key_flags(finetuning_flags)  # its flags in --help, not only in --helpfull
flags.mark_flag_as_required("data_dir")
flags.DEFINE_string("task_name", None, "The name of the task to train: a GLUE task, xnli, a CLUE task (afqmc, "
                    "tnews, iflytek, cmnli, ocnli, csl, cluewsc2020), chnsenticorp, or custom.")
flags.DEFINE_string("tfds_name", None, "Instead of --task_name: a TensorFlow Datasets name (glue/mrpc, glue/mnli, "
                    "imdb_reviews, ...) read with TFDS's feature names (others: --text_a_column ...) into "
                    "--data_dir, TFDS's data directory. Needs tensorflow-datasets and, the first time, network.")
flags.DEFINE_string("text_a_column", "text", "custom task: the column (or JSON key) of the first text.")
flags.DEFINE_string("text_b_column", None, "custom task: the column of the second text, for pairs.")
flags.DEFINE_string("label_column", "label", "custom task: the column of the label.")
flags.DEFINE_string("id_column", None, "custom task: a column of example ids (default: the row index).")
flags.DEFINE_list("label_list", None, "custom task: the labels, in label-id order (default: the sorted "
                  "labels of train.*).")
flags.DEFINE_bool("regression", False, "custom task: the labels are numbers (one output, squared error).")
flags.DEFINE_string("xnli_language", "zh", "xnli task: the language to train and evaluate on.")
flags.DEFINE_enum("truncation", "head", (*classification.TRUNCATIONS, classification.WINDOWS), "Which word pieces "
                  "of a single text longer than max_seq_length - 2 to keep: head (the original), tail, or head+tail "
                  "(the first quarter and the last three quarters); or windows: all of them, the document read "
                  "through windows --doc_stride pieces apart and classified by --window_aggregation.")
flags.DEFINE_integer("doc_stride", None, "--truncation=windows: word pieces between the starts of two windows "
                     "(1 <= N < max_seq_length - 2; default half a window).")
flags.DEFINE_integer("max_windows", 16, "--truncation=windows: the most windows read per document (a longer one "
                     "reads this many, spread over it); memory and time grow with it.")
flags.DEFINE_enum("window_aggregation", "mean", AGGREGATIONS, "--truncation=windows: the document's logits from its "
                  "windows': mean or max of the windows' logits, or attention (a learned weighting of the windows' "
                  "[CLS] vectors).")


def main(_):
    strategy, options = finetuning_flags.prepare()
    task = finetuning_flags.task_of(ClassifierTask, head=finetuning_flags.head_options())
    run_classifier(options, task, strategy, config_name=model_flags.config_name())


def console():
    """The command (see the module docstring): absl parses the flags and runs main."""
    scripting.run(main)


if __name__ == "__main__":
    console()
