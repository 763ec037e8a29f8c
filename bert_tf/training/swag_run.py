"""A whole multiple-choice fine-tuning run on SWAG (Zellers et al. 2018): what run_swag.py runs, callable
from Python. One score per `[CLS] context [SEP] ending [SEP]`, softmax over the endings (Devlin et al. 2019,
section 4.4); the run's frame (checks, weights, training, best checkpoint) is `finetuning_run`'s.

    options = RunOptions(output_dir="out", config=config, vocab_file="vocab.txt", init_checkpoint="bert_dir",
                         max_seq_length=80, do_train=True, do_eval=True)
    results = run_swag(options, SwagTask(data_dir="swagaf/data"))

Writes what the command writes in output_dir: model.ckpt-N, eval_results.txt (eval_accuracy, eval_loss) and
test_results.tsv (the probability of each ending, one line per test example).
"""

import dataclasses
import os

from bert_tf import run_directory
from bert_tf.data.tasks import multiple_choice
from bert_tf.evaluation import glue_metrics
from bert_tf.evaluation.probabilities import softmax
from bert_tf.feature_schema import LABEL_IDS
from bert_tf.modeling.tasks.multiple_choice import BertMultipleChoice
from bert_tf.training import distribute, finetuning_run

FILES = {"train": "train.csv", "dev": "val.csv", "test": "test.csv"}  # SWAG's, in data_dir
# The dev results (eval_results.txt) taken from glue_metrics.logits_results: {key: its key there}; then global_step.
LOGITS_RESULTS = {"eval_accuracy": "accuracy", "eval_loss": "loss", "loss": "loss"}
RESULT_NAMES = (*LOGITS_RESULTS, "global_step")


@dataclasses.dataclass
class SwagTask:
    """data_dir: the folder of SWAG's train.csv, val.csv and test.csv (columns sent1, sent2, ending0..3,
    label; the test file has no label). head: the model's head options ({}: the original linear layer)."""
    data_dir: str
    head: dict = dataclasses.field(default_factory=dict)


def run_swag(options, task, strategy=None, config_name="the config"):
    """Runs `options` (a finetuning_run.RunOptions) on `task` (a SwagTask) under `strategy` (default:
    `distribute.current_strategy()`): training, evaluation on val.csv and prediction on test.csv as the
    options ask. Returns the final dev results, or None without do_eval."""
    strategy = strategy or distribute.current_strategy()
    tokenizer = finetuning_run.start(options, strategy, config_name=config_name, segments=2)  # context, ending
    converted = {}

    def features_of(split):  # read once, also when the dev set is evaluated at every checkpoint
        if split not in converted:
            examples = multiple_choice.read_swag(os.path.join(task.data_dir, FILES[split]), split)
            converted[split] = multiple_choice.convert_examples(examples, options.max_seq_length, tokenizer)
        return converted[split]

    def evaluate():
        """eval_results.txt's dict for the dev set (val.csv): RESULT_NAMES."""
        features = features_of("dev")
        results = glue_metrics.logits_results(tuner.predict(features, options.eval_batch_size), features[LABEL_IDS])
        return {**{name: results[key] for name, key in LOGITS_RESULTS.items()}, "global_step": tuner.global_step}

    finetuning_run.check_best_metric(options, RESULT_NAMES)
    tuner = finetuning_run.create_finetuner(options, strategy, lambda: BertMultipleChoice(options.config,
                                                                                          **task.head))
    results = finetuning_run.train_and_evaluate(tuner, options, lambda: features_of("train"), evaluate)
    if options.do_predict:
        probabilities = softmax(tuner.predict(features_of("test"), options.predict_batch_size))
        run_directory.write_test_results(options.output_dir, probabilities)
    return results
