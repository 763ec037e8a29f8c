"""A whole sentence-embedder fine-tuning run: what run_embedder.py runs, callable from Python. (anchor,
positive) pairs with in-batch negatives (the MultipleNegativesRankingLoss of sentence-transformers), then
retrieval on held-out pairs; the run's frame (checks, weights, training, best checkpoint) is
`finetuning_run`'s.

    options = RunOptions(output_dir="out", config=config, vocab_file="minilm/vocab.txt", init_checkpoint="minilm",
                         do_train=True, do_eval=True, training=FineTuningOptions(num_train_epochs=1))
    results = run_embedder(options, PairsTask(data_dir="pairs"))

Writes what the command writes in output_dir: model.ckpt-N, eval_results.txt (eval_accuracy_at_1,
eval_mrr_at_10) and the sentence-transformers settings (modules.json, ...) that encode_sentences.py and
export_model.py read back.
"""

import dataclasses
import os

from bert_tf.data.tasks import pairs
from bert_tf.evaluation.retrieval import retrieval_metric_names, retrieval_metrics
from bert_tf.formats import sentence_transformers
from bert_tf.modeling.tasks.embedder import BertSentenceEmbedder
from bert_tf.training import distribute, finetuning_run

MODES = ("do_train", "do_eval")  # an embedder's run has no test predictions: encode_sentences.py embeds


@dataclasses.dataclass
class PairsTask:
    """The pairs and the embedder.

    data_dir: the folder of train.tsv / dev.tsv (`anchor<TAB>positive`, no header) or train.jsonl /
      dev.jsonl (`{"anchor", "positive"}`); each batch's other positives are an anchor's negatives.
    pooling, normalize: the embedder's pooling (`SentencePooling`'s modes) and L2 normalization; None: the
      sentence-transformers settings of init_checkpoint, else of output_dir (a previous run's), else mean
      pooling without normalization.
    scale: the cosine similarities are multiplied by this before the softmax (sentence-transformers' 20).
    """
    data_dir: str
    pooling: str = None
    normalize: bool = None
    scale: float = 20.0

    def pair_file(self, split):
        """data_dir's <split>.tsv or <split>.jsonl; ValueError when it has neither."""
        for suffix in pairs.SUFFIXES:
            path = os.path.join(self.data_dir, split + suffix)
            if os.path.isfile(path):
                return path
        raise ValueError(f"data_dir={self.data_dir}: no {split}.tsv or {split}.jsonl")


def run_embedder(options, task, strategy=None, config_name="the config"):
    """Runs `options` (a finetuning_run.RunOptions; do_train and do_eval) on `task` (a PairsTask) under
    `strategy` (default: `distribute.current_strategy()`): training, then retrieval of every dev anchor's
    positive among all dev positives. Returns the dev results (eval_accuracy_at_1, eval_mrr_at_10), or None
    without do_eval."""
    strategy = strategy or distribute.current_strategy()
    tokenizer = finetuning_run.start(options, strategy, MODES, config_name)
    embedder = sentence_transformers.embedder_options(  # opened by `start`; the length is the run's
        options.init_checkpoint or options.output_dir, task.pooling, task.normalize)
    converted = {}

    def features_of(split):  # read once, also when the dev set is evaluated at every checkpoint
        if split not in converted:
            converted[split] = pairs.convert_pairs(pairs.read_pairs(task.pair_file(split)), options.max_seq_length,
                                                   tokenizer)
        return converted[split]

    finetuning_run.check_best_metric(
        options, [f"eval_{name}" for name in retrieval_metric_names()] + ["global_step"])

    def evaluate():
        """eval_results.txt's dict for the dev pairs: eval_accuracy_at_1, eval_mrr_at_10, global_step."""
        embeddings = tuner.predict(features_of("dev"), options.eval_batch_size)  # [N, 2, H]
        results = retrieval_metrics(embeddings[:, 0], embeddings[:, 1])
        return {**{f"eval_{name}": value for name, value in results.items()}, "global_step": tuner.global_step}

    tuner = finetuning_run.create_finetuner(options, strategy, lambda: BertSentenceEmbedder(
        options.config, embedder["pooling"], embedder["normalize"], task.scale))
    sentence_transformers.write_settings(options.output_dir, embedder["pooling"], embedder["normalize"],
                                         options.max_seq_length)
    return finetuning_run.train_and_evaluate(tuner, options, lambda: features_of("train"), evaluate)
