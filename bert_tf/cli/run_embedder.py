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
"""

import functools
import os

from absl import flags

from bert_tf.cli import finetuning_flags, model_flags, scripting, training_flags
from bert_tf.data.tasks import pairs
from bert_tf.evaluation.retrieval import retrieval_metrics
from bert_tf.formats import sentence_transformers
from bert_tf.modeling.tasks.embedder import BertSentenceEmbedder
from bert_tf.training import finetuning_run

FLAGS = flags.FLAGS
model_flags.define("pooling", "normalize")
flags.adopt_module_key_flags(finetuning_flags)  # their flags in --help, not only in --helpfull
flags.adopt_module_key_flags(model_flags)
flags.DEFINE_enum("task", "pairs", ["pairs"], "The training data: pairs = (anchor, positive) texts, in-batch "
                  "negatives.")
flags.DEFINE_float("scale", 20.0, "The cosine similarities are multiplied by this before the softmax "
                   "(sentence-transformers' default).")
flags.mark_flag_as_required("data_dir")


def pair_file(split):
    """data_dir's <split>.tsv or <split>.jsonl; ValueError when it has neither."""
    for suffix in pairs.SUFFIXES:
        path = os.path.join(FLAGS.data_dir, split + suffix)
        if os.path.isfile(path):
            return path
    raise ValueError(f"--data_dir={FLAGS.data_dir}: no {split}.tsv or {split}.jsonl")


@functools.cache  # read once, also when the dev set is evaluated at every checkpoint
def features_of(split, tokenizer):
    return pairs.convert_pairs(pairs.read_pairs(pair_file(split)), FLAGS.max_seq_length, tokenizer)


def evaluate(tuner, tokenizer):
    """eval_results.txt's dict for the dev pairs: eval_accuracy_at_1, eval_mrr_at_10, global_step."""
    embeddings = tuner.predict(features_of("dev", tokenizer), FLAGS.eval_batch_size)  # [N, 2, H]
    results = retrieval_metrics(embeddings[:, 0], embeddings[:, 1])
    return {**{f"eval_{name}": value for name, value in results.items()}, "global_step": tuner.global_step}


def main(_):
    strategy, options, tokenizer = finetuning_flags.setup(modes=("do_train", "do_eval"))
    embedder = sentence_transformers.embedder_options(FLAGS.init_checkpoint or FLAGS.output_dir, FLAGS.pooling,
                                                      FLAGS.normalize)  # the length: --max_seq_length
    tuner = finetuning_run.create_finetuner(options, strategy, lambda: BertSentenceEmbedder(
        options.config, embedder["pooling"], embedder["normalize"], FLAGS.scale))
    sentence_transformers.write_settings(FLAGS.output_dir, embedder["pooling"], embedder["normalize"],
                                         FLAGS.max_seq_length)
    if FLAGS.do_train:
        finetuning_run.train(tuner, options, features_of("train", tokenizer), lambda: evaluate(tuner, tokenizer))
    if FLAGS.do_eval:
        training_flags.write_results(evaluate(tuner, tokenizer))


def console():
    """The command (see the module docstring): absl parses the flags and runs main."""
    scripting.run(main)


if __name__ == "__main__":
    console()
