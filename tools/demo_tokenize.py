"""Tokenizes a text file with FullTokenizer and the in-graph BertTokenizer and shows they agree."""

import sys

import tensorflow as tf

from bert_tf.tokenization import FullTokenizer
from bert_tf.tokenization.in_graph import BertTokenizer

if __name__ == "__main__":
    vocab_file, text_file = sys.argv[1], sys.argv[2]
    with open(text_file, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    python_tokenizer = FullTokenizer(vocab_file, do_lower_case=True)
    python_ids = [python_tokenizer.convert_tokens_to_ids(python_tokenizer.tokenize(line)) for line in lines]
    graph_ids = BertTokenizer(vocab_file, do_lower_case=True).tokenize(tf.constant(lines)).to_list()
    same = sum(p == g for p, g in zip(python_ids, graph_ids))
    print(f"{len(lines)} lines, {sum(map(len, python_ids))} WordPiece tokens; "
          f"in-graph ids equal on {same}/{len(lines)}")
    print("line 0:", " ".join(python_tokenizer.tokenize(lines[0])[:24]), "...")
