"""Fine-tunes BERT for named entity recognition (token classification) on CoNLL-format files.

    python run_ner.py --data_dir=wnut16 --vocab_file=$BERT_BASE_DIR/vocab.txt \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt \
      --do_train --do_eval --do_predict --max_seq_length=128 --train_batch_size=32 --learning_rate=5e-5 \
      --num_train_epochs=3.0 --output_dir=/tmp/ner_output/

Input: `--train_file`, `--dev_file`, `--test_file` in --data_dir (default train.txt, dev.txt, test.txt), one
`word ... tag` per line, a blank line between sentences, BIO / IOB1 / IOBES tags; the test file may have the
words alone. The labels are the training file's tags; a dev or tagged test file with another tag is an
error before training. Each word's label is predicted at its first word piece (Devlin et al. 2019, section
5.3). The same flags as run_classifier.py otherwise.

`--feature_based` trains a BiLSTM tagger on the frozen encoder's activations instead of fine-tuning (the
paper's Table 7), with the same outputs; `--task_head=bilstm` fine-tunes the encoder with that BiLSTM head.

Writes to --output_dir: model.ckpt-N, eval_results.txt (entity-level eval_precision, eval_recall, eval_f1
computed as conlleval, token eval_accuracy, eval_loss, global_step, loss), eval_predictions.txt and
test_predictions.txt (`word [gold] predicted` per line: conlleval's input format).
"""

import functools
import os

import numpy as np
from absl import flags, logging

from bert_tf import run_directory
from bert_tf.cli import finetuning_flags, scripting, training_flags
from bert_tf.data.tasks import tagging
from bert_tf.evaluation import conlleval
from bert_tf.evaluation.probabilities import softmax_cross_entropy
from bert_tf.feature_schema import LABEL_IDS, LAYER_FEATURES
from bert_tf.modeling.tasks.feature_tagger import BertFeatureTagger
from bert_tf.modeling.tasks.token_classifier import BertTokenClassifier
from bert_tf.training import finetuning_run

FLAGS = flags.FLAGS
flags.adopt_module_key_flags(finetuning_flags)  # its flags in --help, not only in --helpfull
flags.mark_flag_as_required("data_dir")
flags.DEFINE_string("train_file", "train.txt", "Training sentences (CoNLL format), in --data_dir.")
flags.DEFINE_string("dev_file", "dev.txt", "Dev sentences (CoNLL format, tagged), in --data_dir.")
flags.DEFINE_string("test_file", "test.txt", "Sentences to tag (CoNLL format, tags optional), in --data_dir.")
flags.DEFINE_bool("feature_based", False, "The feature-based approach (Devlin et al. 2019, section 5.3, Table 7): "
                  "the encoder is frozen, the activations of --feature_layers are computed once per training "
                  "sentence and cached in memory, and a randomly initialised BiLSTM tagger (--bilstm_size, "
                  "--bilstm_layers) trains on them.")
flags.DEFINE_string("feature_layers", "concat_last_four", "--feature_based: the activations the tagger reads: "
                    "embeddings, second_to_last, last, weighted_sum_last_four, concat_last_four (the paper's best), "
                    "weighted_sum_all, or layer indices such as 10,11,12 (0: the embeddings; concatenated). Weighted "
                    "sums learn softmax-normalised scalar weights and a scale, as ELMo.")


@functools.cache  # read once, also when the dev set is evaluated at every checkpoint
def read(name):
    return tagging.read_conll(os.path.join(FLAGS.data_dir, name))


@functools.cache  # converted once too
def convert(name, labels, tokenizer):
    """(features, positions) of the sentences of file `name`; `labels` a tuple."""
    return tagging.convert_sentences(read(name), list(labels), FLAGS.max_seq_length, tokenizer)


def predict(tuner, name, labels, tokenizer, batch_size):
    """(sentences of file `name`, their predicted tags, logits [N, T, L], features)."""
    sentences = read(name)
    features, positions = convert(name, tuple(labels), tokenizer)
    logits = tuner.predict(features, batch_size)
    return sentences, tagging.predicted_tags(logits, positions, labels, sentences), logits, features


def evaluate(tuner, labels, tokenizer):
    sentences, predicted, logits, features = predict(tuner, FLAGS.dev_file, labels, tokenizer, FLAGS.eval_batch_size)
    gold = [s.tags for s in sentences]
    if tagging.is_iobes(labels):
        gold, predicted_bio = [conlleval.to_bio(t) for t in gold], [conlleval.to_bio(t) for t in predicted]
    else:
        predicted_bio = predicted
    scores = conlleval.evaluate(gold, predicted_bio)
    logging.info("conlleval on %s:\n%s", FLAGS.dev_file, scores)
    keep = features[LABEL_IDS] != tagging.IGNORE_LABEL
    loss = float(np.mean(softmax_cross_entropy(logits[keep], features[LABEL_IDS][keep])))
    tagging.write_predictions(os.path.join(FLAGS.output_dir, "eval_predictions.txt"), sentences, predicted)
    return {"eval_precision": scores.precision, "eval_recall": scores.recall, "eval_f1": scores.f1,
            "eval_accuracy": scores.accuracy, "eval_loss": loss, "loss": loss, "global_step": tuner.global_step}


def make_model(config, num_labels):
    """The tagger of the flags: BertFeatureTagger with --feature_based, else BertTokenClassifier."""
    if FLAGS.feature_based:
        return BertFeatureTagger(config, num_labels, FLAGS.feature_layers,
                                 **finetuning_flags.head_options(bilstm_by="--feature_based"))
    if FLAGS["feature_layers"].present:
        raise ValueError("--feature_layers is for --feature_based")
    return BertTokenClassifier(config, num_labels, **finetuning_flags.head_options())


def with_cached_features(tuner, features):
    """`features` with `layer_features` float32 [N, T, K, H]: the frozen encoder's chosen layers of every
    training sentence, computed once (the tagger's training reads them instead of running the encoder)."""
    cached = tuner.predict(features, FLAGS.train_batch_size, "layer_features", "feature extraction")
    logging.info("Cached the features of %d sentences: %s float32, %.1f MB in memory", len(cached),
                 "x".join(map(str, cached.shape)), cached.nbytes / 1e6)
    return {**features, LAYER_FEATURES: cached}


def main(_):
    strategy, options, tokenizer = finetuning_flags.setup()
    train = read(FLAGS.train_file)
    labels = tagging.label_list(train)
    logging.info("%d labels from %s: %s", len(labels), FLAGS.train_file, " ".join(labels))
    # The files read after training, read now: a bad line or a tag the model cannot predict fails first.
    if FLAGS.do_eval or (FLAGS.do_train and FLAGS.best_metric):
        tagging.check_tags(read(FLAGS.dev_file), labels)
    if FLAGS.do_predict:
        tagging.check_tags(read(FLAGS.test_file), labels)
    run_directory.write_labels(FLAGS.output_dir, labels)
    tuner = finetuning_run.create_finetuner(options, strategy, lambda: make_model(options.config, len(labels)))
    if FLAGS.do_train:
        features, _ = convert(FLAGS.train_file, tuple(labels), tokenizer)
        if FLAGS.feature_based:
            features = with_cached_features(tuner, features)
        finetuning_run.train(tuner, options, features, lambda: evaluate(tuner, labels, tokenizer))
    if FLAGS.do_eval:
        training_flags.write_results(evaluate(tuner, labels, tokenizer))
    if FLAGS.do_predict:
        sentences, predicted, _, _ = predict(tuner, FLAGS.test_file, labels, tokenizer, FLAGS.predict_batch_size)
        tagging.write_predictions(os.path.join(FLAGS.output_dir, "test_predictions.txt"), sentences, predicted)


def console():
    """The command (see the module docstring): absl parses the flags and runs main."""
    scripting.run(main)


if __name__ == "__main__":
    console()
