"""The CLUE classification tasks (Xu et al. 2020) in CLUE's download layout, and ChnSentiCorp.

CLUE's tasks are JSON-lines files: `train.json`, `dev.json` and `test.json` in the task's folder (the
`<task>_public.zip` of CLUE; OCNLI's training file is `train.50k.json`), one object per line; the test file's
objects have an "id" and no label. Texts, label lists and their order are those of CLUE's own BERT baseline
(CLUEbenchmark/CLUE, baselines/models/classifier_utils.py; OCNLI's baseline runs its CMNLI processor), so its
fine-tuned checkpoints predict the same ids; the metric is accuracy for every task. `ClueProcessor.write_submission`
writes the file CLUE's leaderboard takes for the test set (`<task>_predict.json`; CLUE 1.1's tnews11_,
cluewsc11_predict.json and OCNLI's ocnli_50k_predict.json): a line `{"id": 0, "label": "1"}` per line of
test.json, in its order.

ChnSentiCorp is a TSV sentiment task as ERNIE and PaddleNLP distribute it: `train.tsv` (`label<TAB>text_a`),
`dev.tsv` and `test.tsv` (with or without a `qid` column; test.tsv with or without labels). It has no
leaderboard file.

    processor = PROCESSORS["afqmc"]()
    examples = processor.get_train_examples("afqmc_public")
"""

import json
import os

from bert_tf import atomic_io
from bert_tf.data.tasks.classification import DataProcessor, Layout, text_field
from bert_tf.data.tasks.glue import BINARY, NLI_LABELS

# TNEWS's label codes and their names (tnews_public/labels.json); codes 105 and 111 are not used.
TNEWS_DESCRIPTIONS = {"100": "news_story", "101": "news_culture", "102": "news_entertainment", "103": "news_sports",
                      "104": "news_finance", "106": "news_house", "107": "news_car", "108": "news_edu",
                      "109": "news_tech", "110": "news_military", "112": "news_travel", "113": "news_world",
                      "114": "news_stock", "115": "news_agriculture", "116": "news_game"}


def clue_layouts(text_a, text_b=None, train_file="train.json"):
    """The layouts of a CLUE task: labelled train and dev files, a test file whose objects have an "id"."""
    return {"train": Layout(train_file, text_a, text_b, label="label"),
            "dev": Layout("dev.json", text_a, text_b, label="label"),
            "test": Layout("test.json", text_a, text_b, guid="id")}


def keyword_text(row, where):
    """CSL's first text: the "keyword" list joined with spaces, as CLUE's baseline builds it."""
    keywords = row["keyword"]
    if not isinstance(keywords, list) or not all(isinstance(k, str) for k in keywords):
        raise ValueError(f"{where}: \"keyword\" is {keywords!r}; expected a list of keywords")
    return " ".join(keywords)


def marked_wsc_text(row, where):
    """CLUEWSC2020's text with its two spans marked as CLUE's baseline marks them: the noun (span1) between
    underscores, the pronoun (span2) in brackets: "这时候放在_床_上...现在[它]突然响了。"."""
    text, target = text_field(row, "text", where), row.get("target")
    if not isinstance(target, dict):
        raise ValueError(f"{where}: \"target\" is {target!r}; expected an object with span1_index, span1_text, "
                         "span2_index, span2_text")
    spans = []
    for span, left, right in (("span1", "_", "_"), ("span2", "[", "]")):
        start, span_text = target.get(f"{span}_index"), target.get(f"{span}_text")
        if not isinstance(start, int) or not isinstance(span_text, str) or \
                text[start:start + len(span_text)] != span_text:
            raise ValueError(f"{where}: {span}_text {span_text!r} is not at {span}_index {start!r} of the text")
        spans.append((start, start + len(span_text), left, right))
    spans.sort()
    if spans[0][1] > spans[1][0]:
        raise ValueError(f"{where}: span1 and span2 overlap in the text")
    pieces, position = [], 0
    for start, end, left, right in spans:
        pieces += [text[position:start], left, text[start:end], right]
        position = end
    return "".join(pieces + [text[position:]])


class ClueProcessor(DataProcessor):
    """A CLUE task: JSON-lines files (`clue_layouts`), accuracy, a leaderboard file for the test set.

    skipped_labels: labels whose examples are left out (the NLI tasks' "-": no majority among the annotators); a
      file whose every example is left out is refused.
    text_a_of: None, or a function (row, "path:line") -> text_a for tasks whose first text is built from the
      object (CSL, CLUEWSC2020).
    label_descriptions: {label: name} that the leaderboard file adds as "label_desc" (TNEWS).
    """
    file_format = "jsonl"
    skipped_labels = ()
    text_a_of = None
    label_descriptions = {}

    def get_examples(self, data_dir, split):
        examples = self._read(data_dir, split, self.labels + self.skipped_labels, text_of=self.text_a_of)
        kept = [example for example in examples if example.label not in self.skipped_labels]
        if not kept:
            raise ValueError(f"{os.path.join(data_dir, self.layouts[split].file)}: no examples in the {split} set: "
                             f"all {len(examples)} are labelled {' or '.join(map(repr, self.skipped_labels))}, "
                             "which the task leaves out")
        return kept

    def write_submission(self, path, examples, predictions):
        """Writes CLUE's leaderboard file: a JSON line {"id": <the test file's id>, "label": "<label>"} (TNEWS:
        and "label_desc") per test example, in the order of test.json."""
        if len(examples) != len(predictions):
            raise ValueError(f"{len(examples)} examples but {len(predictions)} predictions")
        with atomic_io.atomic_write(path) as f:
            for example, label in zip(examples, predictions):
                example_id = example.guid.split("-", 1)[1]
                line = {"id": int(example_id) if example_id.isdecimal() else example_id, "label": label}
                if self.label_descriptions:
                    line["label_desc"] = self.label_descriptions[label]
                f.write(json.dumps(line, ensure_ascii=False) + "\n")


class AfqmcProcessor(ClueProcessor):
    """AFQMC (Ant Financial Question Matching): do two questions mean the same ("1") or not ("0"). Lines
    {"sentence1": ..., "sentence2": ..., "label": "0"}."""
    labels = BINARY
    layouts = clue_layouts("sentence1", "sentence2")
    submission_files = {"test": "afqmc_predict.json"}


class TnewsProcessor(ClueProcessor):
    """TNEWS' (Toutiao news titles): 15 categories, labels "100" ... "116". Lines {"label": "102", "label_desc":
    "news_entertainment", "sentence": <the title>, "keywords": "..."}; the title alone is the text (as in CLUE's
    baseline). The leaderboard file is CLUE 1.1's (test.json)."""
    labels = tuple(TNEWS_DESCRIPTIONS)
    label_descriptions = TNEWS_DESCRIPTIONS
    layouts = clue_layouts("sentence")
    submission_files = {"test": "tnews11_predict.json"}


class IflytekProcessor(ClueProcessor):
    """IFLYTEK' (app descriptions): 119 categories, labels "0" ... "118". Lines {"label": "110", "label_des":
    "社区超市", "sentence": <the description>}."""
    labels = tuple(str(i) for i in range(119))
    layouts = clue_layouts("sentence")
    submission_files = {"test": "iflytek_predict.json"}


class CmnliProcessor(ClueProcessor):
    """CMNLI (MNLI and XNLI in Chinese): premise/hypothesis pairs, 3 classes. Lines {"sentence1": ..., "sentence2":
    ..., "label": "neutral"}; label "-" (no majority) is left out."""
    labels, skipped_labels = NLI_LABELS, ("-",)
    layouts = clue_layouts("sentence1", "sentence2")
    submission_files = {"test": "cmnli_predict.json"}


class OcnliProcessor(CmnliProcessor):
    """OCNLI (original Chinese NLI): CMNLI's lines plus "level", "label0".."label4", "genre", "prem_id", "id";
    training on `train.50k.json`, label "-" left out. The leaderboard file is the one for the 50k training set."""
    layouts = clue_layouts("sentence1", "sentence2", train_file="train.50k.json")
    submission_files = {"test": "ocnli_50k_predict.json"}


class CslProcessor(ClueProcessor):
    """CSL (Chinese scientific literature): are all keywords the paper's own ("1") or some generated ("0").
    Lines {"id": 1, "abst": <the abstract>, "keyword": ["水声学", "FFT", ...], "label": "1"}; text_a is the keywords
    joined with spaces, text_b the abstract (as in CLUE's baseline)."""
    labels = BINARY
    layouts = clue_layouts("keyword", "abst")
    text_a_of = staticmethod(keyword_text)
    submission_files = {"test": "csl_predict.json"}


class Cluewsc2020Processor(ClueProcessor):
    """CLUEWSC2020 (Winograd schemas): does the pronoun (span2) refer to the noun (span1), "true" or "false".
    Lines {"target": {"span2_index": 37, "span1_index": 5, "span1_text": "床", "span2_text": "它"}, "idx": 261,
    "label": "false", "text": ...}; the text with both spans marked (`marked_wsc_text`) is the input. The
    leaderboard file is CLUE 1.1's (test.json)."""
    labels = ("true", "false")
    layouts = clue_layouts("text")
    text_a_of = staticmethod(marked_wsc_text)
    submission_files = {"test": "cluewsc11_predict.json"}


class ChnSentiCorpProcessor(DataProcessor):
    """ChnSentiCorp (Tan Songbo's hotel, book and product reviews): positive ("1") or negative ("0"). TSV files
    with a header naming the columns `label` and `text_a` (ERNIE's files; PaddleNLP's add `qid`, and their test.tsv
    has no label); no leaderboard file."""
    labels = BINARY
    layouts = {split: Layout(f"{split}.tsv", "text_a", label="label") for split in ("train", "dev", "test")}

    def get_examples(self, data_dir, split):
        return self._read(data_dir, split, self.labels, label_optional=split == "test")


PROCESSORS = {"afqmc": AfqmcProcessor, "tnews": TnewsProcessor, "iflytek": IflytekProcessor, "cmnli": CmnliProcessor,
              "ocnli": OcnliProcessor, "csl": CslProcessor, "cluewsc2020": Cluewsc2020Processor,
              "chnsenticorp": ChnSentiCorpProcessor}
