"""The peers' side of bench/bench_finetune.py: one whole fine-tuning job (data read and tokenized, model loaded,
trained, dev set predicted, model saved) in a peer venv, never in bert_tf's Python.

    <peer venv python> bench/finetune_peers.py --worker SPEC.json

SPEC (written by bench_finetune.py): {"implementation": "hf" | "keras_hub", "job": "rt" | "ner" | "squad",
"group_by_length": bool, "precision": "float32" | "bfloat16", "data_dir", "model_dir" (the MiniLM HF directory,
or for keras_hub the KerasHub preset bert_tf wrote), "output_dir", "hparams": bench_finetune.JOBS[job]'s
hyper-parameters, "torch_threads" (0: torch's default)}. The worker writes `predictions.json` into output_dir
(rt: the dev labels, a list of ints; ner: the dev sentences' word-level tags, a list of lists; squad: {question
id: answer text}), which the parent scores with bert_tf's evaluation code, and prints one `RESULT <json>` line
(bench/harness.py): {"begin" (time.time() when the job function starts: the imports of this file are done),
"train_start", "train_end" (time.time() around the training call), "train_sequences" (the
sequences that training went through: examples x epochs), "versions", "threads"}.

hf (transformers' `Trainer`, as HF's fine-tuning examples run_glue.py / run_ner.py / run_qa.py use it): the
files read into a `datasets.Dataset`, tokenized with the directory's fast tokenizer in `Dataset.map(...,
batched=True)`; `AutoModelFor{SequenceClassification, TokenClassification, QuestionAnswering}.from_pretrained`;
`Trainer(model, args, train_dataset, processing_class=tokenizer)` with its default collator
(`DataCollatorWithPadding`: each batch padded to its longest; NER: `DataCollatorForTokenClassification`, as
run_ner.py) and its defaults but the job's hyper-parameters (RT, NER: the shared batch, lr, epochs, 10% linear
warmup then linear decay, AdamW weight decay 0.01, epsilon 1e-6; SQuAD: run_qa.py's README command, batch 12,
lr 3e-5, 2 epochs, max_seq_length 384, doc_stride 128, and TrainingArguments' defaults for the rest: no
warmup, no weight decay, epsilon 1e-8) and the round's seed; `train_sampling_strategy="group_by_length"` (what
transformers 5 calls the former `group_by_length=True`) for hf_grouped; `bf16=True` (autocast on the CPU,
`use_cpu=True`) for bfloat16; then `trainer.predict` on the dev set in its order (with group_by_length,
transformers 5 would sample the dev set by length too) and `trainer.save_model`. NER: each word's
label on its first word piece, -100 on the others (run_ner.py with label_all_tokens=False); a word without a
piece (truncated) is predicted "O". SQuAD: run_qa.py's `prepare_train_features` / `prepare_validation_features`
(truncation="only_second", overflowing windows with `stride=doc_stride` tokens of overlap, offset mapping;
padding=False: the Trainer's dynamic padding, where run_qa.py's --pad_to_max_length defaults to padding every
window to max_seq_length) and `postprocess_qa_predictions` (n-best 20, max answer length 30, SQuAD v1: no null
answer), with one change: questions are cut after max_query_length word pieces, as bert_tf cuts them
(`cut_questions`; run_qa.py does not cut them, and its tokenizer then panics on the cloze set's longest
questions, which leave the context no more than doc_stride tokens).

keras_hub (the RT job only): `BertTextClassifier.from_preset(preset, num_classes=2)` with
`BertTextClassifierPreprocessor.from_preset(preset, sequence_length=max_seq_length)` (every text padded to
max_seq_length: KerasHub's own path), compiled with keras AdamW (the shared schedule, weight decay 0.01 except
bias / LayerNorm, epsilon 1e-6, global clipnorm 1.0), `fit` on a tf.data dataset of (text, label) batches
(the task maps its preprocessor over it), `predict` on the dev texts, `save_to_preset`; bfloat16: Keras's
`mixed_bfloat16` policy. KerasHub's BertBackbone computes the tanh GELU (MiniLM was trained with the exact one).

Only the standard library at import time (bench.harness); torch, transformers, datasets, keras and keras_hub are
imported inside the job functions.
"""

import argparse
import csv
import json
import math
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # bench.harness (stdlib only) in the peers' venvs

from bench import harness  # noqa: E402  (after the path)

csv.field_size_limit(sys.maxsize)


# ------------------------------------------------------------------------------------------------- the data

def read_sentiment(path):
    """(sentences, labels) of an SST-2 layout table: header `sentence<TAB>label`."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    header = rows[0]
    text, label = header.index("sentence"), header.index("label")
    return [row[text] for row in rows[1:]], [int(row[label]) for row in rows[1:]]


def read_conll(path):
    """(words, tags) lists of a CoNLL file's sentences (`word ... tag` lines, a blank line between sentences)."""
    sentences, words, tags = [], [], []
    with open(path, encoding="utf-8") as f:
        for line in list(f) + [""]:
            fields = line.split()
            if not fields or fields[0] == "-DOCSTART-":
                if words:
                    sentences.append((words, tags))
                words, tags = [], []
                continue
            words.append(fields[0])
            tags.append(fields[-1])
    return [s[0] for s in sentences], [s[1] for s in sentences]


def read_squad(path):
    """The questions of a SQuAD v1.1 file as columns: id, question, context, answers {text, answer_start}."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)["data"]
    columns = {"id": [], "question": [], "context": [], "answers": []}
    for article in data:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                columns["id"].append(qa["id"])
                columns["question"].append(qa["question"])
                columns["context"].append(paragraph["context"])
                columns["answers"].append({"text": [a["text"] for a in qa["answers"]],
                                           "answer_start": [a["answer_start"] for a in qa["answers"]]})
    return columns


def write_predictions(spec, predictions):
    with open(os.path.join(spec["output_dir"], "predictions.json"), "w", encoding="utf-8") as f:
        json.dump(predictions, f)


# ------------------------------------------------------------------------------------------ HF Trainer

def hf_arguments(spec, transformers, torch):
    """TrainingArguments: Trainer's defaults but the shared hyper-parameters, the sampler and the precision."""
    hp = spec["hparams"]
    return transformers.TrainingArguments(
        output_dir=os.path.join(spec["output_dir"], "trainer"), per_device_train_batch_size=hp["batch_size"],
        per_device_eval_batch_size=hp["eval_batch_size"], learning_rate=hp["learning_rate"],
        num_train_epochs=hp["epochs"], warmup_steps=hp["warmup_proportion"], weight_decay=hp["weight_decay"],
        adam_epsilon=hp["adam_epsilon"], max_grad_norm=hp["clip_norm"], seed=hp["seed"],
        bf16=spec["precision"] == "bfloat16", use_cpu=not torch.cuda.is_available(), report_to="none",
        train_sampling_strategy="group_by_length" if spec["group_by_length"] else "random")


def hf_job(spec):
    begin = time.time()
    import torch
    if spec.get("torch_threads"):
        torch.set_num_threads(spec["torch_threads"])
    import datasets
    import transformers
    transformers.logging.set_verbosity_warning()
    hp, job, model_dir = spec["hparams"], spec["job"], spec["model_dir"]
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    data_dir = spec["data_dir"]
    extra = {}
    if job == "rt":
        train, dev = (dict(zip(("sentence", "label"), read_sentiment(os.path.join(data_dir, name))))
                      for name in ("train.tsv", "dev.tsv"))

        def tokenize(batch):
            return tokenizer(batch["sentence"], truncation=True, max_length=hp["max_seq_length"])

        train_set = datasets.Dataset.from_dict(train).map(tokenize, batched=True, remove_columns=["sentence"])
        dev_set = datasets.Dataset.from_dict(dev).map(tokenize, batched=True, remove_columns=["sentence"])
        model = transformers.AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=2)
    elif job == "ner":
        train_words, train_tags = read_conll(os.path.join(data_dir, "train.txt"))
        dev_words, dev_tags = read_conll(os.path.join(data_dir, "dev.txt"))
        tags = {t for sentence in train_tags for t in sentence}
        labels = ["O"] * ("O" in tags) + sorted(tags - {"O"})
        label_ids = {label: i for i, label in enumerate(labels)}

        def tokenize_and_align_labels(batch):
            tokenized = tokenizer(batch["tokens"], truncation=True, max_length=hp["max_seq_length"],
                                  is_split_into_words=True)
            all_labels = []
            for i, sentence_tags in enumerate(batch["ner_tags"]):
                previous, ids = None, []
                for word in tokenized.word_ids(batch_index=i):
                    ids.append(-100 if word is None or word == previous else label_ids.get(sentence_tags[word], 0))
                    previous = word
                all_labels.append(ids)
            tokenized["labels"] = all_labels
            return tokenized

        columns = ["tokens", "ner_tags"]
        train_set = datasets.Dataset.from_dict({"tokens": train_words, "ner_tags": train_tags}).map(
            tokenize_and_align_labels, batched=True, remove_columns=columns)
        dev_set = datasets.Dataset.from_dict({"tokens": dev_words, "ner_tags": dev_tags}).map(
            tokenize_and_align_labels, batched=True, remove_columns=columns)
        model = transformers.AutoModelForTokenClassification.from_pretrained(
            model_dir, num_labels=len(labels), id2label=dict(enumerate(labels)), label2id=label_ids)
        extra["data_collator"] = transformers.DataCollatorForTokenClassification(tokenizer)
    else:
        train_examples = datasets.Dataset.from_dict(read_squad(os.path.join(data_dir, "train-v1.1.json")))
        dev_examples = datasets.Dataset.from_dict(read_squad(os.path.join(data_dir, "dev-v1.1.json")))
        train_set = train_examples.map(lambda b: prepare_train_features(b, tokenizer, hp), batched=True,
                                       remove_columns=train_examples.column_names)
        dev_features = dev_examples.map(lambda b: prepare_validation_features(b, tokenizer, hp), batched=True,
                                        remove_columns=dev_examples.column_names)
        dev_set = dev_features.remove_columns(["example_id", "offset_mapping"])
        model = transformers.AutoModelForQuestionAnswering.from_pretrained(model_dir)

    trainer = transformers.Trainer(model=model, args=hf_arguments(spec, transformers, torch), train_dataset=train_set,
                                   processing_class=tokenizer, **extra)
    train_start = time.time()
    trainer.train()
    train_end = time.time()
    # transformers 5 also samples evaluation by length under group_by_length (its _get_eval_sampler), so that
    # `predict` returns the dev set in another order (compute_metrics would see labels in the same order; the
    # predictions written here must follow the file): predict in order.
    trainer.args.train_sampling_strategy = "random"
    output = trainer.predict(dev_set)
    if job == "rt":
        predictions = output.predictions.argmax(-1).tolist()
    elif job == "ner":
        predictions = ner_word_tags(output.predictions, dev_words, tokenizer, hp, labels)
    else:
        predictions = postprocess_qa_predictions(dev_examples, dev_features, output.predictions, hp)
    write_predictions(spec, predictions)
    trainer.save_model(os.path.join(spec["output_dir"], "model"))
    return {"begin": begin, "train_start": train_start, "train_end": train_end,
            "train_sequences": len(train_set) * hp["epochs"], "threads": torch.get_num_threads(),
            "versions": f"torch {torch.__version__}, transformers {transformers.__version__}, "
                        f"datasets {datasets.__version__}, accelerate {version_of('accelerate')}"}


def version_of(package):
    from importlib import metadata
    return metadata.version(package)


def ner_word_tags(logits, sentences, tokenizer, hp, labels):
    """Each dev word's tag: the argmax at its first word piece (run_ner.py's alignment); "O" for a word without a
    piece (cut by max_seq_length)."""
    predicted = logits.argmax(-1)
    tokenized = tokenizer(sentences, truncation=True, max_length=hp["max_seq_length"], is_split_into_words=True)
    tags = []
    for i, words in enumerate(sentences):
        sentence, previous = ["O"] * len(words), None
        for position, word in enumerate(tokenized.word_ids(batch_index=i)):
            if word is not None and word != previous:
                sentence[word] = labels[int(predicted[i, position])]
            previous = word
        tags.append(sentence)
    return tags


def cut_questions(questions, tokenizer, max_query_length):
    """Each question cut after its first `max_query_length` word pieces, as bert_tf (and the original run_squad.py)
    cuts them: run_qa.py does not, and the tokenizer refuses (a Rust panic) a question that leaves the context
    fewer than doc_stride + 1 tokens of the window."""
    encoded = tokenizer(questions, add_special_tokens=False, return_offsets_mapping=True)
    return [question if len(offsets) <= max_query_length else question[:offsets[max_query_length - 1][1]]
            for question, offsets in zip(questions, encoded["offset_mapping"])]


def windows(examples, tokenizer, hp):
    """run_qa.py's tokenization: each (question, context) pair as windows of max_seq_length tokens, doc_stride
    apart, unpadded, with the offsets and each window's example (`overflow_to_sample_mapping`)."""
    questions = cut_questions([q.lstrip() for q in examples["question"]], tokenizer, hp["max_query_length"])
    return tokenizer(questions, examples["context"], truncation="only_second", max_length=hp["max_seq_length"],
                     stride=hp["doc_stride"], return_overflowing_tokens=True, return_offsets_mapping=True,
                     padding=False)


def prepare_train_features(examples, tokenizer, hp):
    """run_qa.py's: windows of the (question, context) pairs, the answer's token span in each (or [CLS])."""
    tokenized = windows(examples, tokenizer, hp)
    sample_mapping = tokenized.pop("overflow_to_sample_mapping")
    offset_mapping = tokenized.pop("offset_mapping")
    tokenized["start_positions"], tokenized["end_positions"] = [], []
    for i, offsets in enumerate(offset_mapping):
        input_ids = tokenized["input_ids"][i]
        cls_index = input_ids.index(tokenizer.cls_token_id)
        sequence_ids = tokenized.sequence_ids(i)
        answers = examples["answers"][sample_mapping[i]]
        if not answers["answer_start"]:
            tokenized["start_positions"].append(cls_index)
            tokenized["end_positions"].append(cls_index)
            continue
        start_char = answers["answer_start"][0]
        end_char = start_char + len(answers["text"][0])
        token_start = 0
        while sequence_ids[token_start] != 1:
            token_start += 1
        token_end = len(input_ids) - 1
        while sequence_ids[token_end] != 1:
            token_end -= 1
        if not (offsets[token_start][0] <= start_char and offsets[token_end][1] >= end_char):
            tokenized["start_positions"].append(cls_index)
            tokenized["end_positions"].append(cls_index)
            continue
        while token_start < len(offsets) and offsets[token_start][0] <= start_char:
            token_start += 1
        tokenized["start_positions"].append(token_start - 1)
        while offsets[token_end][1] >= end_char:
            token_end -= 1
        tokenized["end_positions"].append(token_end + 1)
    return tokenized


def prepare_validation_features(examples, tokenizer, hp):
    """run_qa.py's: the windows, each with its example id and the offsets of its context tokens (None elsewhere)."""
    tokenized = windows(examples, tokenizer, hp)
    sample_mapping = tokenized.pop("overflow_to_sample_mapping")
    tokenized["example_id"] = []
    for i in range(len(tokenized["input_ids"])):
        sequence_ids = tokenized.sequence_ids(i)
        tokenized["example_id"].append(examples["id"][sample_mapping[i]])
        tokenized["offset_mapping"][i] = [o if sequence_ids[k] == 1 else None
                                          for k, o in enumerate(tokenized["offset_mapping"][i])]
    return tokenized


def postprocess_qa_predictions(examples, features, predictions, hp):
    """utils_qa.py's `postprocess_qa_predictions` (SQuAD v1: no null answer): {example id: the best span's text},
    the span of the highest start + end logit among the n-best starts and ends of every window."""
    import numpy as np
    all_start_logits, all_end_logits = predictions
    n_best, max_answer_length = hp["n_best_size"], hp["max_answer_length"]
    features_of = {}
    for index, example_id in enumerate(features["example_id"]):
        features_of.setdefault(example_id, []).append(index)
    offsets_of = features["offset_mapping"]
    answers = {}
    for example in examples:
        best_score, best_text = None, ""
        for index in features_of.get(example["id"], []):
            start_logits, end_logits, offsets = all_start_logits[index], all_end_logits[index], offsets_of[index]
            starts = np.argsort(start_logits)[-1:-n_best - 1:-1].tolist()
            ends = np.argsort(end_logits)[-1:-n_best - 1:-1].tolist()
            for start in starts:
                for end in ends:
                    if (start >= len(offsets) or end >= len(offsets) or offsets[start] is None
                            or offsets[end] is None or len(offsets[start]) < 2 or len(offsets[end]) < 2):
                        continue
                    if end < start or end - start + 1 > max_answer_length:
                        continue
                    score = float(start_logits[start] + end_logits[end])
                    if best_score is None or score > best_score:
                        best_score = score
                        best_text = example["context"][offsets[start][0]:offsets[end][1]]
        answers[example["id"]] = best_text
    return answers


# ---------------------------------------------------------------------------------------------- KerasHub

def keras_hub_job(spec):
    begin = time.time()
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras
    import keras_hub
    import tensorflow as tf
    hp = spec["hparams"]
    if spec["job"] != "rt":
        raise ValueError(f"KerasHub has no task model for the {spec['job']} job")
    keras.utils.set_random_seed(hp["seed"])
    if spec["precision"] == "bfloat16":
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    train_texts, train_labels = read_sentiment(os.path.join(spec["data_dir"], "train.tsv"))
    dev_texts, _ = read_sentiment(os.path.join(spec["data_dir"], "dev.tsv"))
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor.from_preset(
        spec["model_dir"], sequence_length=hp["max_seq_length"])
    classifier = keras_hub.models.BertTextClassifier.from_preset(spec["model_dir"], num_classes=2,
                                                                 preprocessor=preprocessor)
    batch = hp["batch_size"]
    steps = math.ceil(len(train_texts) / batch) * hp["epochs"]
    optimizer = keras.optimizers.AdamW(
        learning_rate=warmup_linear_decay(keras, hp["learning_rate"], steps, int(steps * hp["warmup_proportion"])),
        weight_decay=hp["weight_decay"], epsilon=hp["adam_epsilon"], global_clipnorm=hp["clip_norm"])
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
    classifier.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                       metrics=["sparse_categorical_accuracy"])
    train = tf.data.Dataset.from_tensor_slices((train_texts, train_labels)).shuffle(
        len(train_texts), seed=hp["seed"]).batch(batch)
    train_start = time.time()
    classifier.fit(train, epochs=hp["epochs"], verbose=2)
    train_end = time.time()
    logits = classifier.predict(tf.data.Dataset.from_tensor_slices(dev_texts).batch(hp["eval_batch_size"]),
                                verbose=0)
    write_predictions(spec, [int(i) for i in logits.argmax(-1)])
    classifier.save_to_preset(os.path.join(spec["output_dir"], "model"))
    return {"begin": begin, "train_start": train_start, "train_end": train_end,
            "train_sequences": len(train_texts) * hp["epochs"], "threads": None,
            "versions": f"TF {tf.__version__}, Keras {keras.__version__}, keras-hub {keras_hub.__version__}"}


def warmup_linear_decay(keras, peak, steps, warmup):
    """peak x step / warmup for the first `warmup` steps, then linear to 0 at `steps` (bert_tf's and Trainer's)."""

    class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
        def __call__(self, step):
            step = keras.ops.cast(step, "float32")
            up = step / max(warmup, 1)
            down = (steps - step) / max(steps - warmup, 1)
            return peak * keras.ops.maximum(0.0, keras.ops.minimum(up, down))

        def get_config(self):
            return {}

    return WarmupLinearDecay()


def run_job(spec):
    os.makedirs(spec["output_dir"], exist_ok=True)
    return {"hf": hf_job, "keras_hub": keras_hub_job}[spec["implementation"]](spec)


def main():
    harness.parse_args(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]), run_job)
    sys.exit("bench/finetune_peers.py runs only as bench/bench_finetune.py's worker (--worker=<spec file>)")


if __name__ == "__main__":
    main()
