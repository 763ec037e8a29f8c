"""A rule-based sentence splitter for preparing pretraining text (English-like and CJK punctuation).

Western text: a sentence ends at ".", "!" or "?" (runs like "?!" or "..." included), plus any closing
quotes or brackets, when white space follows and the next word (after opening quotes or brackets) starts
with an upper-case letter, a digit or a CJK character. Not after abbreviations (Mr., Dr., Gen., Jan., Inc., vs., ...),
initials (J. Smith) or dotted acronyms (U.S., e.g.), nor "No."/"Fig."/... before a number; decimals
(3.14) never split because no space follows the point. CJK text: a sentence ends after 。！？ (or ASCII
"!"/"?" right before a CJK character) and closing quotes, with or without following space.

`sentence_spans` cuts text already split into units (the words of segmented Chinese, or characters) after a
unit that ends a sentence (CJK_SENTENCE_ENDS by default) and the closing units that follow it: the one
Chinese sentence splitter of the data tools (tools/make_cloze_squad.py, tools/make_finetuning_data.py,
tools/paper_tables.py), each with its own ends and closers.
"""

import re

_CLOSERS = "\"'”’)]}»」』）】"
CJK_SENTENCE_ENDS = "。！？"
_OPENERS = "\"'“‘([{«「『（【"
_ABBREVIATIONS = frozenset(
    "mr mrs ms messrs dr prof sr jr st mt gen gov sen rep rev hon lt col capt sgt maj adm cmdr "
    "jan feb mar apr jun jul aug sep sept oct nov dec inc ltd co corp bros vs".split())
_NUMBER_ABBREVIATIONS = frozenset("no nos art fig vol pp sec ch".split())  # only before a number
_ACRONYM = re.compile(r"^[A-Za-z](?:\.[A-Za-z])*$")  # "J", "U.S", "e.g" (the final "." excluded)

_WESTERN_END = re.compile(rf"[.!?]+[{re.escape(_CLOSERS)}]*(?=\s)")
# CJK ends, and ASCII "!"/"?" right before a non-ASCII letter (CJK text typed with ASCII punctuation).
_CJK_END = re.compile(rf"(?:[{CJK_SENTENCE_ENDS}]+|[!?]+(?=[{re.escape(_CLOSERS)}]*[^\x00-\u2fff]))"
                      rf"[{re.escape(_CLOSERS)}]*")
_LAST_WORD = re.compile(r"(\S*)$")


def _ends_sentence(text, match):
    """Whether the Western terminator `match` in `text` (followed by white space) ends a sentence."""
    rest = text[match.end():match.end() + 20].lstrip().lstrip(_OPENERS)
    # A sentence starts with an upper-case letter, a digit or a letter without case (CJK).
    if not rest or not (rest[0].isupper() or rest[0].isdigit() or rest[0].isalpha() and not rest[0].islower()):
        return False
    if match.group().rstrip(_CLOSERS) != ".":
        return True
    word = _LAST_WORD.search(text, max(0, match.start() - 40), match.start()).group(1).lstrip(_OPENERS)
    if word.lower() in _ABBREVIATIONS or (_ACRONYM.match(word) and word != "I"):
        return False
    return not (word.lower() in _NUMBER_ABBREVIATIONS and rest[0].isdigit())


def split_sentences(paragraph):
    """Splits one paragraph (`str`) into a list of sentences, white space collapsed to single spaces.

    >>> split_sentences('Mr. Smith paid $3.50. "Why?" he asked. 今天很好。你呢？')
    ['Mr. Smith paid $3.50.', '"Why?" he asked.', '今天很好。', '你呢？']
    """
    text = " ".join(paragraph.split())
    cuts = {m.end() for m in _WESTERN_END.finditer(text) if _ends_sentence(text, m)}
    cuts.update(m.end() for m in _CJK_END.finditer(text))
    sentences, start = [], 0
    for cut in sorted(cuts) + [len(text)]:
        sentence = text[start:cut].strip()
        if sentence:
            sentences.append(sentence)
        start = cut
    return sentences


def sentence_spans(units, ends=CJK_SENTENCE_ENDS, closers=_CLOSERS):
    """The sentences of `units` (a sequence of str: the words of a segmented text, or a text's characters) as
    (start, end) indexes into it, end exclusive: a sentence ends after a unit in `ends` and the units in
    `closers` (closing quotes, brackets) that follow it; the last one at the end of `units`. `ends` and `closers`
    are collections of units (a str: its characters).

    >>> sentence_spans(["他", "说", "：", "“", "好", "。", "”", "走", "吧", "！"])
    [(0, 7), (7, 10)]
    """
    ends, closers = frozenset(ends), frozenset(closers)
    spans, start, ended = [], 0, False
    for index, unit in enumerate(units):
        if ended and unit not in closers:
            spans.append((start, index))
            start, ended = index, False
        ended = ended or unit in ends
    if start < len(units):
        spans.append((start, len(units)))
    return spans
