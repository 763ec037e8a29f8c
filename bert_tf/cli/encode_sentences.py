"""Sentence embeddings of a text file (one text per line), or semantic search over its lines.

    python encode_sentences.py --init_checkpoint=$MINILM --input_file=sentences.txt --output_file=sentences.npy
    python encode_sentences.py --init_checkpoint=$MINILM --input_file=sentences.txt \
      --query="How is the economy doing?" --top_k=5

`--init_checkpoint` takes any checkpoint (a sentence-transformers directory such as all-MiniLM-L6-v2 gives its
pooling, normalization and max_seq_length; other checkpoints take --pooling, --normalize, --max_seq_length).
The config and vocab.txt default to the ones in (or beside) the checkpoint. The output is `.npy` (float32
[N, H], in input order) or `.jsonl` (`{"index": i, "embedding": [...]}` per line), written atomically.
A text longer than --max_seq_length is truncated (sentence-transformers' default); with `--doc_stride=N` it is read
whole: windows N word pieces apart, each embedded, averaged weighted by their tokens (normalized again when the
model normalizes).
`--query` prints the --top_k lines most similar to the query (cosine): `rank<TAB>score<TAB>line<TAB>text`.
"""

import sys

from absl import flags, logging

from bert_tf.cli import flag_checks, model_flags, scripting

FLAGS = flags.FLAGS
model_flags.define("init_checkpoint", "bert_config_file", "vocab_file", "do_lower_case", "pooling", "normalize")
flags.adopt_module_key_flags(model_flags)  # its flags in --help, not only in --helpfull
flags.DEFINE_string("input_file", None, "UTF-8 text file, one text per line (no empty lines, no `a ||| b` pairs).")
flags.DEFINE_string("output_file", None, "Where to write the embeddings: .npy (float32 [N, H]) or .jsonl. "
                    "Optional with --query.")
flags.DEFINE_integer("max_seq_length", None, "Tokens per text, [CLS]/[SEP] included; longer texts are "
                     "truncated. Default: the sentence-transformers directory's max_seq_length, else 128.")
flags.DEFINE_integer("doc_stride", None, "Read each text whole: a text longer than max_seq_length becomes windows of "
                     "max_seq_length - 2 word pieces this many apart (1 <= N < max_seq_length - 2), and its "
                     "embedding the mean of the windows' weighted by their tokens.")
flags.DEFINE_integer("batch_size", 32, "Texts (windows) per forward pass (sorted by length, each batch cut to about "
                     "its longest).")
flags.DEFINE_string("query", None, "Print the --top_k lines of --input_file most similar to this text.")
flags.DEFINE_integer("top_k", 5, "How many lines --query prints.")
for _name in ("init_checkpoint", "input_file"):
    flags.mark_flag_as_required(_name)


def main(_):
    logging.set_verbosity(logging.INFO)
    flag_checks.check_at_least(1, "batch_size")
    flag_checks.check_at_least(1, "top_k")
    flag_checks.check_input_file("input_file")
    if FLAGS.output_file:
        flag_checks.check_output_file("output_file")
        if not FLAGS.output_file.endswith((".npy", ".jsonl")):
            raise ValueError(f"--output_file={FLAGS.output_file}: expected a .npy or .jsonl file")
    elif FLAGS.query is None:
        raise ValueError("--output_file is required (or --query to search the input's lines)")
    flag_checks.check_outputs_not_inputs(flag_checks.paths_of("output_file"), flag_checks.paths_of(
        "input_file", "vocab_file", "bert_config_file", "init_checkpoint"))
    from bert_tf import embedding  # TensorFlow: after the flag checks
    from bert_tf.checkpoints import config_of, load_checkpoint
    from bert_tf.data import windows
    from bert_tf.formats.sentence_transformers import embedder_options
    from bert_tf.modeling.tasks.embedder import BertSentenceEmbedder
    from bert_tf.tokenization import FullTokenizer

    source = model_flags.init_checkpoint()  # opened once: the config, settings, checks and weights come from it
    options = embedder_options(source, FLAGS.pooling, FLAGS.normalize, FLAGS.max_seq_length)
    if FLAGS.doc_stride is not None:
        windows.check_stride(options["max_seq_length"] - 2, FLAGS.doc_stride)
    config = config_of(source, FLAGS.bert_config_file)
    model_flags.check_init_checkpoint(config)
    vocab_file = FLAGS.vocab_file or source.vocab_file
    if not vocab_file:
        raise ValueError(f"--init_checkpoint={FLAGS.init_checkpoint}: no vocab.txt in or beside it; pass --vocab_file")
    tokenizer = FullTokenizer(vocab_file, do_lower_case=FLAGS.do_lower_case)
    config.check_vocab_size(len(tokenizer.vocab), vocab_file)
    texts = embedding.read_texts(FLAGS.input_file)
    embedder = BertSentenceEmbedder(config, options["pooling"], options["normalize"])
    load_checkpoint(embedder, source)
    logging.info("Embedding %d texts: %s pooling%s, max_seq_length %d, %s", len(texts), options["pooling"],
                 ", normalized" if options["normalize"] else "", options["max_seq_length"],
                 "truncated" if FLAGS.doc_stride is None else f"read whole in windows {FLAGS.doc_stride} pieces apart")
    encoder = embedding.SentenceEncoder(embedder, tokenizer, options["max_seq_length"], FLAGS.doc_stride)
    vectors = encoder.encode(texts, FLAGS.batch_size, description="embedding")
    if FLAGS.output_file:
        embedding.write_embeddings(FLAGS.output_file, vectors)
        logging.info("Wrote %d embeddings of %d dimensions to %s", *vectors.shape, FLAGS.output_file)
    if FLAGS.query is not None:
        query = encoder.encode([FLAGS.query])[0]
        for rank, (index, score) in enumerate(embedding.most_similar(query, vectors, FLAGS.top_k), 1):
            sys.stdout.write(f"{rank}\t{score:.4f}\t{index + 1}\t{texts[index]}\n")


def console():
    """The command (see the module docstring): absl parses the flags and runs main."""
    scripting.run(main)


if __name__ == "__main__":
    console()
