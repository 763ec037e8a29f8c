"""Google-format bert_config.json files of the BERT sizes of the paper and of Turc et al. (2019), shipped with
the package: `--bert_config_file=base` (any command) reads bert_base_uncased.json here.

    tiny L2/H128, mini L4/H256, small L4/H512, medium L8/H512, base L12/H768, large L24/H1024
        (the English uncased vocab: 30,522)
    chinese L12/H768 (Google's chinese_L-12_H-768_A-12), chinese_small L4/H512
        (the Chinese character vocab: 21,128)
"""

import os

NAMES = ("tiny", "mini", "small", "medium", "base", "large", "chinese", "chinese_small")


def path(name):
    """The path of the config file of size `name` (one of NAMES)."""
    if name not in NAMES:
        raise ValueError(f"{name!r} is not a bundled config: expected one of {', '.join(NAMES)}")
    file = f"bert_{name}.json" if name.startswith("chinese") else f"bert_{name}_uncased.json"
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), file)


def resolve(value):
    """A --bert_config_file value as a path: a size of NAMES is its bundled file, anything else is a path."""
    return path(value) if value in NAMES else value
