"""Create masked-LM / next-sentence pretraining TFRecords (the original's flags, algorithm and format).

    python create_pretraining_data.py --input_file=corpus.txt --output_file=out.tfrecord \
      --vocab_file=$BERT_DIR/vocab.txt --do_lower_case=True --max_seq_length=128 \
      --max_predictions_per_seq=20 --masked_lm_prob=0.15 --random_seed=12345 --dupe_factor=5

Input: one sentence per line, blank lines between documents (`prepare_corpus.py` makes it from raw text
or JSON lines); `--input_file` is a comma list of files or glob patterns.

Output: `--output_file` is a comma list of files (records go round-robin, as in the original) or a
pattern with `{shard}` / `{num_shards}` plus `--num_output_shards`, e.g.
`--output_file=data/train-{shard:05d}-of-{num_shards:05d}.tfrecord --num_output_shards=64`. Each file is
written as `<name>.incomplete` and renamed when everything is written; an error, Ctrl-C or SIGTERM deletes
them (exit status 130 when interrupted).

Beyond the original: streaming with bounded memory (`--shuffle_buffer_mb` of documents are shuffled;
random next sentences and instance shuffling reach across groups of >= 1 MB of documents, see
`bert_tf/data/pretraining/job.py`), `--num_workers` processes (the output does not depend on it: the same
seed gives the same files), `--dynamic_masking` (unmasked records, masked at training time by
`bert_tf.data.pretraining.pipeline.pretraining_dataset`), `--invalid_utf8`, `--do_whole_word_mask`, progress lines and
an end summary. Chinese whole-word masking (Chinese-BERT-wwm): `--do_whole_word_mask --chinese_word_segmenter=jieba`
(or `=spaces` for pre-segmented text) masks the characters of a Chinese word together; the ids stay per character
(`bert_tf/data/pretraining/chinese_words.py`).
"""

import os
import signal
import sys
import time

from absl import flags, logging

from bert_tf.cli import flag_checks, model_flags, scripting
from bert_tf.data.pretraining.chinese_words import SEGMENTERS
from bert_tf.data.pretraining.corpus import INVALID_UTF8_CHOICES, INVALID_UTF8_HELP, expand_input_patterns
from bert_tf.data.pretraining.instances import InstanceOptions
from bert_tf.data.pretraining.job import create_pretraining_data, output_files_from_flag, summary_lines
from bert_tf.data.pretraining.masking import MaskingConfig
from bert_tf.tokenization import FullTokenizer

FLAGS = flags.FLAGS
model_flags.define("vocab_file", "do_lower_case")
flags.adopt_module_key_flags(model_flags)  # its flags in --help, not only in --helpfull
flags.DEFINE_string("input_file", None, "Input raw text file (or comma-separated list of files / glob patterns).")
flags.DEFINE_string("output_file", None, "Output TF example file (or comma-separated list of files, or a "
                    "pattern with {shard} and {num_shards} used with --num_output_shards).")
flags.DEFINE_bool("do_whole_word_mask", False, "Whether to use whole word masking rather than per-WordPiece "
                  "masking.")
flags.DEFINE_enum("chinese_word_segmenter", "none", SEGMENTERS, "With --do_whole_word_mask, mask Chinese words "
                  "whole (Chinese-BERT-wwm): jieba segments the text (pip install jieba), spaces reads words from "
                  "pre-segmented text; none masks Chinese per character, as the original. The ids stay per "
                  "character.")
flags.DEFINE_integer("max_seq_length", 128, "Maximum sequence length.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Maximum number of masked LM predictions per sequence.")
flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation.")
flags.DEFINE_integer("dupe_factor", 10, "Number of times to duplicate the input data (with different masks).")
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
flags.DEFINE_float("short_seq_prob", 0.1, "Probability of creating sequences which are shorter than the "
                   "maximum length.")
flags.DEFINE_integer("num_output_shards", None, "Number of output files when --output_file is a {shard} "
                     "pattern.")
flags.DEFINE_integer("num_workers", os.cpu_count(), "Worker processes (1 = all in this process). The output "
                     "is the same for any value.")
flags.DEFINE_bool("dynamic_masking", False, "Write unmasked instances (input_ids, input_mask, segment_ids, "
                  "next_sentence_labels) for masking at training time (run_pretraining.py --dynamic_masking, where "
                  "the masking flags then apply); use --dupe_factor=1 with it.")
flags.DEFINE_enum("invalid_utf8", "error", INVALID_UTF8_CHOICES, INVALID_UTF8_HELP)
flags.DEFINE_integer("shuffle_buffer_mb", 64, "Documents are shuffled within a buffer of this many MB of "
                     "input text (the original shuffles the whole corpus in memory).")
for name in ("input_file", "output_file", "vocab_file"):
    flags.mark_flag_as_required(name)


def _interrupt(signum, frame):
    raise KeyboardInterrupt  # SIGTERM cleans up like Ctrl-C


def main(_):
    logging.set_verbosity(logging.INFO)
    signal.signal(signal.SIGTERM, _interrupt)
    # Explicitly: a process started in the background by a non-interactive shell inherits SIGINT ignored.
    signal.signal(signal.SIGINT, _interrupt)
    start = time.monotonic()
    input_files = expand_input_patterns(FLAGS.input_file)
    output_files = output_files_from_flag(FLAGS.output_file, FLAGS.num_output_shards)
    flag_checks.check_outputs_not_inputs({"output_file": output_files},
                                         {"input_file": input_files, "vocab_file": [FLAGS.vocab_file]})
    tokenizer = FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
    masking = MaskingConfig.from_vocab(tokenizer.vocab, FLAGS.masked_lm_prob, FLAGS.max_predictions_per_seq,
                                       FLAGS.do_whole_word_mask, FLAGS.vocab_file)
    options = InstanceOptions(FLAGS.max_seq_length, FLAGS.short_seq_prob, FLAGS.dupe_factor, FLAGS.random_seed,
                              None if FLAGS.dynamic_masking else masking, FLAGS.chinese_word_segmenter)
    try:
        stats, reader = create_pretraining_data(
            input_files, output_files, tokenizer, options, num_workers=FLAGS.num_workers,
            shuffle_buffer_bytes=FLAGS.shuffle_buffer_mb << 20, invalid_utf8=FLAGS.invalid_utf8)
    except KeyboardInterrupt:
        logging.error("Interrupted: no output file written")
        sys.exit(130)
    for line in summary_lines(stats, reader, time.monotonic() - start):
        logging.info("%s", line)
    logging.info("Wrote %d instances to %s", stats.instances, ", ".join(output_files))


def console():
    """The command (see the module docstring): absl parses the flags and runs main."""
    scripting.run(main)


if __name__ == "__main__":
    console()
