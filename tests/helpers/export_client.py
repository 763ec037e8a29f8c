"""Calls exported SavedModels the way a serving process would, with only tensorflow and tensorflow-text.

Run by tests/test_export.py with the python of a fresh venv that has no bert_tf (`python -I`, so neither
this directory nor PYTHONPATH is on sys.path); it must import nothing but the standard library, NumPy and TF.

    python -I export_client.py requests.json outputs.npz errors.json

requests.json: a list of requests, answered in order by one process (models are loaded once):
  {"name": str, "model": SavedModel dir, "signature": name, "inputs": {input name: value}}  -> signature
  {"name": str, "model": dir, "method": attribute or "__call__", "args": [value, ...], "kwargs": {...}}
A value is {"strings": [base64 bytes]}, {"int32": nested lists}, {"ragged_int32": nested lists}, or a list
or dict of values. `"keep": [output names]` limits what is written.

outputs.npz: `name/output` arrays (strings as fixed-width bytes); a ragged output as `name/output.values`
and `.row_splits`, a list output as `name/output.0`, `.1`, ... errors.json: {name: "ErrorType: message"} for
each failed request (a tf.errors.OpError); the process goes on with the next request, as a serving process
would.
"""

import base64
import importlib.util
import json
import sys

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the WordPiece op the SavedModels use)


def decode(value):
    if isinstance(value, list):
        return [decode(v) for v in value]
    if "strings" in value:
        return tf.constant([base64.b64decode(s) for s in value["strings"]], tf.string)
    if "int32" in value:
        return tf.constant(np.asarray(value["int32"], np.int32))
    if "ragged_int32" in value:
        return tf.ragged.constant(value["ragged_int32"], tf.int32, row_splits_dtype=tf.int64)
    return {key: decode(v) for key, v in value.items()}


def flatten(prefix, value, arrays):
    if isinstance(value, tf.RaggedTensor):
        arrays[prefix + ".values"] = value.flat_values.numpy()
        arrays[prefix + ".row_splits"] = value.row_splits.numpy()
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            flatten(f"{prefix}.{i}", item, arrays)
    elif value.dtype == tf.string:
        arrays[prefix] = value.numpy().astype(bytes)  # fixed-width bytes: npz would pickle an object array
    else:
        arrays[prefix] = value.numpy()


def main(requests_file, outputs_file, errors_file):
    if importlib.util.find_spec("bert_tf") is not None:
        raise SystemExit("bert_tf is importable here; this client must run without it")
    with open(requests_file, encoding="utf-8") as f:
        requests = json.load(f)
    models, arrays, errors = {}, {}, {}
    for request in requests:
        if request["model"] not in models:
            models[request["model"]] = tf.saved_model.load(request["model"])
        loaded = models[request["model"]]
        try:
            if "signature" in request:
                outputs = loaded.signatures[request["signature"]](**decode(request["inputs"]))
            else:
                function = loaded if request["method"] == "__call__" else getattr(loaded, request["method"])
                outputs = function(*decode(request.get("args", [])), **request.get("kwargs", {}))
        except tf.errors.OpError as e:
            errors[request["name"]] = f"{type(e).__name__}: {e.message}"
            continue
        if not isinstance(outputs, dict):
            outputs = {"output": outputs}
        for key, value in outputs.items():
            if request.get("keep") is None or key in request["keep"]:
                flatten(f"{request['name']}/{key}", value, arrays)
    np.savez(outputs_file, **arrays)
    with open(errors_file, "w", encoding="utf-8") as f:
        json.dump(errors, f)


if __name__ == "__main__":
    main(*sys.argv[1:])
