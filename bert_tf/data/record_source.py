"""Random access to the records of TFRecord files without TensorFlow: the data source of the input on hosts
without it (Grain's `RandomAccessDataSource` protocol: `len(source)`, `source[i]` -> the i-th record's bytes).

    source = RecordSource(["part-00000.tfrecord", "part-00001.tfrecord"])
    len(source)          # records in all files, in file order
    source[12]           # the serialized tf.train.Example of record 12

Opening walks every file's framing once (`record_framing.record_spans`: a truncated or damaged file is a
ValueError naming it and the byte offset, before any training) and keeps each record's offset and length
(16 bytes a record). Reads are positioned (`os.pread`), so worker processes share nothing but the file
names and the spans: a source is pickled without its open files, and each process opens its own.
"""

import bisect
import os

import numpy as np

from bert_tf.data import record_framing


class RecordSource:
    """The records of `files` (local paths) in order, each file's then the next's."""

    def __init__(self, files):
        self.files = [os.fspath(f) for f in files]
        if not self.files:
            raise ValueError("no record file given")
        for path in self.files:
            if "://" in path:
                raise ValueError(f"{path}: the input without TensorFlow reads local files only (copy the records "
                                 "to a local disk, or use the TensorFlow input)")
        self._spans = [record_framing.record_spans(path) for path in self.files]
        self._starts = np.cumsum([0] + [len(spans) for spans in self._spans]).tolist()
        self._fds = {}

    def __len__(self):
        return self._starts[-1]

    def __getitem__(self, index):
        if not -len(self) <= index < len(self):
            raise IndexError(f"record {index} of {len(self)}")
        index %= len(self)
        file_index = bisect.bisect_right(self._starts, index) - 1
        offset, length = self._spans[file_index][index - self._starts[file_index]]
        fd = self._fds.get(file_index)
        if fd is None:
            fd = self._fds[file_index] = os.open(self.files[file_index], os.O_RDONLY)
        data = os.pread(fd, int(length), int(offset))
        if len(data) != length:
            raise ValueError(f"{self.files[file_index]}: record {index - self._starts[file_index]} at byte {offset} "
                             f"is cut after {len(data)} of its {length} bytes (the file changed while training)")
        return data

    def __getstate__(self):
        return {**self.__dict__, "_fds": {}}

    def __del__(self):
        for fd in getattr(self, "_fds", {}).values():
            os.close(fd)

    def __repr__(self):
        return f"RecordSource({len(self.files)} files, {len(self)} records)"
