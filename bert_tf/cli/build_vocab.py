"""Learn a WordPiece vocab.txt from a corpus, in Google's layout, for FullTokenizer and the in-graph tokenizer.

    python build_vocab.py --input_file=corpus.txt --output_file=vocab.txt --vocab_size=30522 \
      --do_lower_case=True

`--input_file` (comma list or glob patterns) is any UTF-8 text, e.g. the output of `prepare_corpus.py`.
The vocab starts with [PAD], [unused0] .. [unused98], [UNK], [CLS], [SEP], [MASK] (ids 0 .. 103, as in
Google's English vocab), then every CJK character of the corpus, then pieces learned by tensorflow-text's
WordPiece learner from `BasicTokenizer` words (so `FullTokenizer` splits text the way the vocab was
learned). Distinct words are counted in memory: for a very large corpus, pass a sample of it.
"""

from absl import flags, logging

from bert_tf.cli import flag_checks, model_flags, scripting
from bert_tf.data.pretraining.corpus import INVALID_UTF8_CHOICES, INVALID_UTF8_HELP, CorpusReader, expand_input_patterns
from bert_tf.data.pretraining.vocab_builder import count_words, learn_vocab, unknown_rate, write_vocab

FLAGS = flags.FLAGS
model_flags.define("do_lower_case")
flags.adopt_module_key_flags(model_flags)  # its flags in --help, not only in --helpfull
flags.DEFINE_string("input_file", None, "Text files: comma-separated list of files or glob patterns.")
flags.DEFINE_string("output_file", None, "The vocab.txt to write.")
flags.DEFINE_integer("vocab_size", 30522, "Largest vocab size (reserved tokens included).")
flags.DEFINE_enum("invalid_utf8", "error", INVALID_UTF8_CHOICES, INVALID_UTF8_HELP)
for name in ("input_file", "output_file"):
    flags.mark_flag_as_required(name)


def main(_):
    logging.set_verbosity(logging.INFO)
    flag_checks.check_output_file("output_file")  # before counting the corpus
    files = expand_input_patterns(FLAGS.input_file)
    flag_checks.check_outputs_not_inputs({"output_file": [FLAGS.output_file]}, {"input_file": files})
    reader = CorpusReader(FLAGS.invalid_utf8)
    lines = (text for path in files for _, text in reader.lines(path))
    word_counts = count_words(lines, FLAGS.do_lower_case)
    logging.info("Counted %d distinct words (%d in all) in %.1f MB", len(word_counts),
                 sum(word_counts.values()), reader.bytes_read / 1e6)
    tokens = learn_vocab(word_counts, FLAGS.vocab_size)
    write_vocab(tokens, FLAGS.output_file)
    logging.info("Wrote %d tokens to %s; %.3f%% of word occurrences become [UNK]", len(tokens),
                 FLAGS.output_file, 100 * unknown_rate(tokens, word_counts))


def console():
    """The command (see the module docstring): absl parses the flags and runs main."""
    scripting.run(main)


if __name__ == "__main__":
    console()
