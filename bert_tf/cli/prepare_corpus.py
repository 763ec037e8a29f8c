"""Turn raw text into the pretraining input: one sentence per line, a blank line between documents.

    python prepare_corpus.py --input_file='books/*.txt' --output_file=corpus.txt
    python prepare_corpus.py --input_file='wiki/*/wiki_*' --input_format=jsonl --text_field=text \
      --output_file=corpus.txt

`--input_format=text`: each file is one document, paragraphs separated by blank lines (lines inside a
paragraph are joined). `--input_format=jsonl`: each line is a JSON object (a WikiExtractor `--json` dump,
for instance) whose `--text_field` is a document, one paragraph per line. Sentences are split with
`bert_tf.data.pretraining.sentences.split_sentences` (abbreviations, initials, decimals, quotes, CJK sentence ends).
The output is written under a temporary name and renamed when complete.
"""

from absl import flags, logging

from bert_tf.cli import flag_checks, scripting
from bert_tf.data.pretraining.corpus import (
    INPUT_FORMATS,
    INVALID_UTF8_CHOICES,
    INVALID_UTF8_HELP,
    expand_input_patterns,
    prepare_corpus,
)

FLAGS = flags.FLAGS
flags.DEFINE_string("input_file", None, "Raw input files: comma-separated list of files or glob patterns.")
flags.DEFINE_string("output_file", None, "The prepared corpus (input of create_pretraining_data.py).")
flags.DEFINE_enum("input_format", "text", INPUT_FORMATS, "text: one document per file; jsonl: one JSON "
                  "object per line.")
flags.DEFINE_string("text_field", "text", "With --input_format=jsonl: the field that holds the document.")
flags.DEFINE_enum("invalid_utf8", "error", INVALID_UTF8_CHOICES, INVALID_UTF8_HELP)
for name in ("input_file", "output_file"):
    flags.mark_flag_as_required(name)


def main(_):
    logging.set_verbosity(logging.INFO)
    flag_checks.check_output_file("output_file")
    files = expand_input_patterns(FLAGS.input_file)
    flag_checks.check_outputs_not_inputs({"output_file": [FLAGS.output_file]}, {"input_file": files})
    documents, sentences, reader = prepare_corpus(files, FLAGS.output_file, FLAGS.input_format, FLAGS.text_field,
                                                  FLAGS.invalid_utf8)
    if not documents:
        raise ValueError(f"no text in {FLAGS.input_file!r} ({len(files)} files)")
    logging.info("Wrote %d documents, %d sentences (from %.1f MB in %d files%s) to %s", documents, sentences,
                 reader.bytes_read / 1e6, len(files),
                 f", {reader.skipped_lines} invalid UTF-8 lines skipped" if reader.skipped_lines else "",
                 FLAGS.output_file)


def console():
    """The command (see the module docstring): absl parses the flags and runs main."""
    scripting.run(main)


if __name__ == "__main__":
    console()
