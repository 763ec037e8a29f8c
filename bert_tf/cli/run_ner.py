"""Fine-tunes BERT for token classification: named entity recognition, Chinese word segmentation, part of
speech, on CoNLL-format or People's Daily files.

    python run_ner.py --data_dir=wnut16 --vocab_file=$BERT_BASE_DIR/vocab.txt \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt \
      --do_train --do_eval --do_predict --max_seq_length=128 --train_batch_size=32 --learning_rate=5e-5 \
      --num_train_epochs=3.0 --output_dir=/tmp/ner_output/

Input: `--train_file`, `--dev_file`, `--test_file` in --data_dir (default train.txt, dev.txt, test.txt), one
`word ... tag` per line, a blank line between sentences (CoNLL; MSRA's Chinese NER files have a character per
line), or with --input_format=peoples_daily a sentence per line of `word/TAG` items; the test file may have the
words alone. The labels are the training file's tags; a dev or tagged test file with another tag is an
error before training. --tag_scheme says what the tags are and how the dev file is scored:

    entities      BIO / IOB1 / IOBES entity tags; conlleval's entity-level precision, recall and F1
    segmentation  Chinese word segmentation, B / M / E / S per character; word precision, recall, F1 and
                  OOV recall as the SIGHAN bakeoff's score script
    pos           any tag per word (part of speech); eval_accuracy

People's Daily files become, per scheme, characters with B/M/E/S tags, characters with BIO tags of PER (nr),
LOC (ns) and ORG (nt), or words with their POS tags (bert_tf/data/tasks/peoples_daily.py):

    python run_ner.py --data_dir=peoples_daily --input_format=peoples_daily --tag_scheme=segmentation ...

Each word's label is predicted at its first word piece (Devlin et al. 2019, section 5.3). A sentence longer than
--max_seq_length is cut (its last words predicted O), or with --truncation=windows read whole: windows
--doc_stride pieces apart, every window holding a word's first piece trains on its tag, and the word is tagged in
the window where it has the most context. The same flags as run_classifier.py otherwise.

`--feature_based` trains a BiLSTM tagger on the frozen encoder's activations instead of fine-tuning (the
paper's Table 7), with the same outputs; `--task_head=bilstm` fine-tunes the encoder with that BiLSTM head.

Writes to --output_dir: model.ckpt-N, eval_results.txt (the scheme's scores, eval_loss, global_step, loss),
eval_predictions.txt and test_predictions.txt (`word [gold] predicted` per line: conlleval's input format).

The flags map onto `bert_tf.training.finetuning_run.RunOptions` and `bert_tf.training.ner_run.TaggingTask`
(same names); the run is `ner_run.run_ner`, which a notebook calls the same way.
"""

import os

from absl import flags

from bert_tf import run_directory
from bert_tf.cli import finetuning_flags, flag_checks, model_flags, scripting
from bert_tf.data.tasks.tagging import SCHEMES
from bert_tf.training.ner_run import INPUT_FORMATS, PREDICTION_FILES, TRUNCATIONS, TaggingTask, run_ner

FLAGS = flags.FLAGS
flags.adopt_module_key_flags(finetuning_flags)  # its flags in --help, not only in --helpfull
flags.mark_flag_as_required("data_dir")
flags.DEFINE_string("train_file", "train.txt", "Training sentences, in --data_dir.")
flags.DEFINE_string("dev_file", "dev.txt", "Dev sentences (tagged), in --data_dir.")
flags.DEFINE_string("test_file", "test.txt", "Sentences to tag (tags optional), in --data_dir.")
flags.DEFINE_enum("tag_scheme", "entities", SCHEMES, "What the tags are and how the dev file is scored: entities "
                  "(BIO / IOB1 / IOBES; conlleval's entity F1), segmentation (B/M/E/S per character; SIGHAN's word "
                  "F1) or pos (any tag per word; accuracy).")
flags.DEFINE_enum("input_format", "conll", INPUT_FORMATS, "conll: a word (or character) and its tag per line, a "
                  "blank line between sentences; peoples_daily: a sentence per line of word/TAG items, made into "
                  "the --tag_scheme's items.")
flags.DEFINE_bool("feature_based", False, "The feature-based approach (Devlin et al. 2019, section 5.3, Table 7): "
                  "the encoder is frozen, the activations of --feature_layers are computed once per training "
                  "sentence and cached in memory, and a randomly initialised BiLSTM tagger (--bilstm_size, "
                  "--bilstm_layers) trains on them.")
flags.DEFINE_string("feature_layers", "concat_last_four", "--feature_based: the activations the tagger reads: "
                    "embeddings, second_to_last, last, weighted_sum_last_four, concat_last_four (the paper's best), "
                    "weighted_sum_all, or layer indices such as 10,11,12 (0: the embeddings; concatenated). Weighted "
                    "sums learn softmax-normalised scalar weights and a scale, as ELMo.")

flags.DEFINE_enum("truncation", "head", TRUNCATIONS, "A sentence longer than --max_seq_length: head cuts it (the "
                  "words that do not fit are predicted O, or S in segmentation); windows reads it whole, in windows "
                  "--doc_stride word pieces apart, each word tagged in the window where it has the most context.")
flags.DEFINE_integer("doc_stride", None, "--truncation=windows: word pieces between the starts of two windows "
                     "(1 <= N < max_seq_length - 2; default half a window).")


def task():
    """The TaggingTask of the flags; ValueError for --feature_layers without --feature_based."""
    if FLAGS["feature_layers"].present and not FLAGS.feature_based:
        raise ValueError("--feature_layers is for --feature_based")
    head = finetuning_flags.head_options(bilstm_by="--feature_based" if FLAGS.feature_based else None)
    return finetuning_flags.task_of(TaggingTask, head=head)


def main(_):
    strategy, options = finetuning_flags.prepare()
    written = [*PREDICTION_FILES.values(), run_directory.RESULTS_FILE, run_directory.LABELS_FILE]
    flag_checks.check_outputs_not_inputs(
        {"output_dir": [os.path.join(FLAGS.output_dir, name) for name in written]},
        {name: [os.path.join(FLAGS.data_dir or "", FLAGS[name].value)]
         for name in ("train_file", "dev_file", "test_file")})
    run_ner(options, task(), strategy, config_name=model_flags.config_name())


def console():
    """The command (see the module docstring): absl parses the flags and runs main."""
    scripting.run(main)


if __name__ == "__main__":
    console()
