"""A whole token-classification fine-tuning run (named entities, Chinese word segmentation, part of speech):
what run_ner.py runs, callable from Python. The task's sentences are CoNLL files (`word ... tag` per line, a
blank line between sentences) or People's Daily files (`word/TAG` items, a sentence per line); each word's label
is predicted at its first word piece (Devlin et al. 2019, section 5.3). The run's frame (checks, weights,
training, best checkpoint) is `finetuning_run`'s.

    options = RunOptions(output_dir="out", config=config, vocab_file="vocab.txt", init_checkpoint="bert_dir",
                         do_train=True, do_eval=True, training=FineTuningOptions(num_train_epochs=3))
    results = run_ner(options, TaggingTask(data_dir="wnut16"))

Writes what the command writes in output_dir: model.ckpt-N, labels.txt, eval_results.txt (the scheme's
scores, `TaggingRun.scores`, and eval_loss), eval_predictions.txt and test_predictions.txt (`word [gold]
predicted` per line: conlleval's input).
"""

import dataclasses
import functools
import os

import numpy as np
from absl import logging

from bert_tf import run_directory
from bert_tf.data import windows
from bert_tf.data.tasks import peoples_daily, tagging
from bert_tf.evaluation import conlleval, segmentation
from bert_tf.evaluation.probabilities import softmax_cross_entropy
from bert_tf.feature_schema import LABEL_IDS, LAYER_FEATURES
from bert_tf.modeling.tasks.feature_tagger import BertFeatureTagger
from bert_tf.modeling.tasks.token_classifier import BertTokenClassifier
from bert_tf.training import distribute, finetuning_run


@dataclasses.dataclass
class TaggingTask:
    """The task's files and tagger.

    data_dir: the folder of train_file, dev_file and test_file (the test file's tags optional). The labels are
      the training file's tags.
    tag_scheme: tagging.SCHEMES: "entities" (BIO, IOB1 or IOBES tags), "segmentation" (B/M/E/S per character)
      or "pos" (any tag per word).
    input_format: "conll" (a word per line) or "peoples_daily" (`word/TAG` items, read for the scheme by
      `bert_tf.data.tasks.peoples_daily`).
    feature_based: the feature-based approach (the paper's Table 7): the encoder is frozen, the activations
      of `feature_layers` (BertFeatureTagger's choices, e.g. concat_last_four) are computed once per training
      sentence and a BiLSTM tagger trains on them.
    head: the tagger's head options ({}: the original linear layer; {"task_head": "bilstm", "bilstm_size": ...,
      "bilstm_layers": ...}; feature_based always has a BiLSTM, of these sizes).
    truncation: a sentence longer than max_seq_length is "head": cut (its last words predicted
      tagging.TRUNCATED_TAG), or "windows": read whole in windows `doc_stride` word pieces apart (None: half a
      window), each word tagged in the window where it has the most context (`tagging.convert_sentences`).
    """
    data_dir: str
    train_file: str = "train.txt"
    dev_file: str = "dev.txt"
    test_file: str = "test.txt"
    tag_scheme: str = "entities"
    input_format: str = "conll"
    feature_based: bool = False
    feature_layers: str = "concat_last_four"
    head: dict = dataclasses.field(default_factory=dict)
    truncation: str = "head"
    doc_stride: int = None

    def stride(self, max_seq_length):
        """The windows' stride for sentences of `max_seq_length` (None: cut them); ValueError for a truncation
        not in TRUNCATIONS, a doc_stride without windows, or one outside 1 <= N < max_seq_length - 2."""
        if self.truncation not in TRUNCATIONS:
            raise ValueError(f"truncation={self.truncation!r} is not one of {', '.join(TRUNCATIONS)}")
        if self.truncation == "head":
            if self.doc_stride is not None:
                raise ValueError(f"doc_stride={self.doc_stride} is for truncation=windows (truncation=head cuts)")
            return None
        stride = (max_seq_length - 2) // 2 if self.doc_stride is None else self.doc_stride
        windows.check_stride(max_seq_length - 2, stride)
        return stride

    def model(self, config, num_labels):
        """The tagger: BertFeatureTagger when feature_based, else BertTokenClassifier."""
        if self.feature_based:
            return BertFeatureTagger(config, num_labels, self.feature_layers, **self.head)
        return BertTokenClassifier(config, num_labels, **self.head)

    def read(self, name):
        """The sentences of the file `name` in data_dir."""
        path = os.path.join(self.data_dir, name)
        if self.input_format == "conll":
            return tagging.read_conll(path, self.tag_scheme)
        if self.input_format == "peoples_daily":
            return peoples_daily.read_peoples_daily(path, self.tag_scheme)
        raise ValueError(f"input_format={self.input_format!r} is not one of {', '.join(INPUT_FORMATS)}")


INPUT_FORMATS = ("conll", "peoples_daily")
TRUNCATIONS = ("head", "windows")
PREDICTION_FILES = {"dev": "eval_predictions.txt", "test": "test_predictions.txt"}  # in output_dir
# Each tag scheme's dev scores (eval_<name> in eval_results.txt; TaggingRun.scores).
# Each names attributes of the scheme's scores: WordAccuracy, segmentation.SegmentationScores, ConllevalResult.
SCORES = {"pos": ("accuracy",), "segmentation": ("precision", "recall", "f1", "oov_rate", "oov_recall", "iv_recall"),
          "entities": ("precision", "recall", "f1", "accuracy")}


@dataclasses.dataclass
class WordAccuracy:
    """The pos scheme's scores: of `words` gold-tagged words, `correct` predicted with the gold tag."""
    words: int
    correct: int

    @property
    def accuracy(self):
        return self.correct / self.words

    def __str__(self):
        return f"{self.correct} of {self.words} words tagged correctly"


class TaggingRun:
    """One run's sentences, read and converted once per file, and what it computes from a FineTuner's
    predictions."""

    def __init__(self, options, task, tokenizer):
        self.options, self.task, self.tokenizer = options, task, tokenizer
        self.stride = task.stride(options.max_seq_length)
        self._sentences, self._features = {}, {}
        self.labels = tagging.label_list(self.sentences(task.train_file))
        logging.info("%d labels from %s: %s", len(self.labels), task.train_file, " ".join(self.labels))

    def sentences(self, name):
        """The sentences of the file `name` in data_dir, read once."""
        if name not in self._sentences:
            self._sentences[name] = self.task.read(name)
        return self._sentences[name]

    def features_of(self, name):
        """(features, word positions) of the sentences of file `name`, converted once."""
        if name not in self._features:
            self._features[name] = tagging.convert_sentences(self.sentences(name), self.labels,
                                                             self.options.max_seq_length, self.tokenizer,
                                                             self.task.tag_scheme, self.stride)
        return self._features[name]

    def predict(self, tuner, name, batch_size):
        """(sentences of file `name`, their predicted tags, logits [N, T, L], features)."""
        features, positions = self.features_of(name)
        logits = tuner.predict(features, batch_size)
        sentences = self.sentences(name)
        predicted = tagging.predicted_tags(logits, positions, self.labels, sentences,
                                           tagging.TRUNCATED_TAG[self.task.tag_scheme])
        return sentences, predicted, logits, features

    def scores(self, sentences, predicted):
        """The dev scores of the tag scheme, as eval_results.txt's keys:
          entities: conlleval's entity-level eval_precision / eval_recall / eval_f1, token eval_accuracy;
          segmentation: word-level eval_precision / eval_recall / eval_f1, eval_oov_rate / eval_oov_recall /
            eval_iv_recall (OOV: gold words not in the training file), as SIGHAN's score script;
          pos: eval_accuracy, the share of words with the gold tag."""
        gold = [s.tags for s in sentences]
        scheme = self.task.tag_scheme
        if scheme == "pos":
            scores = WordAccuracy(sum(len(tags) for tags in gold),
                                  sum(g == p for tags, guess in zip(gold, predicted) for g, p in zip(tags, guess)))
            logging.info("%s", scores)
        elif scheme == "segmentation":
            scores = segmentation.evaluate([s.words for s in sentences], gold, predicted, self.training_words)
            logging.info("segmentation of %s: %s", self.task.dev_file, scores)
        else:
            if tagging.is_iobes(self.labels):
                gold, predicted = [conlleval.to_bio(t) for t in gold], [conlleval.to_bio(t) for t in predicted]
            scores = conlleval.evaluate(gold, predicted)
            logging.info("conlleval on %s:\n%s", self.task.dev_file, scores)
        return {f"eval_{name}": getattr(scores, name) for name in SCORES[scheme]}

    @functools.cached_property
    def training_words(self):
        """The words of the training file (set of str), built once: segmentation's dictionary, outside which a
        gold word is out of vocabulary (OOV)."""
        return {word for s in self.sentences(self.task.train_file) for word in segmentation.words_of(s.words, s.tags)}

    def result_names(self):
        """The keys of `evaluate`'s dev results, known before training."""
        return [f"eval_{name}" for name in SCORES[self.task.tag_scheme]] + ["eval_loss", "loss", "global_step"]

    def evaluate(self, tuner):
        """eval_results.txt's dict of the dev file (`scores`, eval_loss); writes eval_predictions.txt."""
        sentences, predicted, logits, features = self.predict(tuner, self.task.dev_file, self.options.eval_batch_size)
        keep = features[LABEL_IDS] != tagging.IGNORE_LABEL
        loss = float(np.mean(softmax_cross_entropy(logits[keep], features[LABEL_IDS][keep])))
        tagging.write_predictions(os.path.join(self.options.output_dir, PREDICTION_FILES["dev"]), sentences,
                                  predicted)
        return {**self.scores(sentences, predicted), "eval_loss": loss, "loss": loss,
                "global_step": tuner.global_step}

    def training_features(self, tuner):
        """The training sentences' features; feature_based: with `layer_features` float32 [N, T, K, H], the
        frozen encoder's chosen layers of every sentence, computed once (the tagger's training reads them
        instead of running the encoder)."""
        features, _ = self.features_of(self.task.train_file)
        if not self.task.feature_based:
            return features
        cached = tuner.predict(features, self.options.training.train_batch_size, "layer_features",
                               "feature extraction")
        logging.info("Cached the features of %d sentences: %s float32, %.1f MB in memory", len(cached),
                     "x".join(map(str, cached.shape)), cached.nbytes / 1e6)
        return {**features, LAYER_FEATURES: cached}


def run_ner(options, task, strategy=None, config_name="the config"):
    """Runs `options` (a finetuning_run.RunOptions) on `task` (a TaggingTask) under `strategy` (default:
    `distribute.current_strategy()`): every file read and checked before any model is built (a bad line, or
    a dev / tagged test tag the model cannot predict, fails first), then training, evaluation and prediction as
    the options ask. Returns the final dev results, or None without do_eval."""
    task.stride(options.max_seq_length)  # bad window settings fail before anything is read or written
    strategy = strategy or distribute.current_strategy()
    tokenizer = finetuning_run.start(options, strategy, config_name=config_name)
    run = TaggingRun(options, task, tokenizer)
    tagging.check_training_tags(run.sentences(task.train_file), task.tag_scheme)
    if options.do_eval or (options.do_train and options.best_metric):
        tagging.check_tagged(run.sentences(task.dev_file), "dev")
        tagging.check_tags(run.sentences(task.dev_file), run.labels, task.tag_scheme)
    if options.do_predict:
        tagging.check_tags(run.sentences(task.test_file), run.labels, task.tag_scheme)
    finetuning_run.check_best_metric(options, run.result_names())
    run_directory.write_labels(options.output_dir, run.labels)
    tuner = finetuning_run.create_finetuner(options, strategy, lambda: task.model(options.config, len(run.labels)))
    results = finetuning_run.train_and_evaluate(tuner, options, lambda: run.training_features(tuner),
                                                lambda: run.evaluate(tuner))
    if options.do_predict:
        sentences, predicted, _, _ = run.predict(tuner, task.test_file, options.predict_batch_size)
        tagging.write_predictions(os.path.join(options.output_dir, PREDICTION_FILES["test"]), sentences, predicted)
    return results
