"""bert_tf.data.windows: the sliding windows over a long text and each piece's window of most context."""

import pytest

from bert_tf.data import windows


def test_windows_and_max_context():
    assert windows.doc_spans(10, 4, 3) == [(0, 4), (3, 4), (6, 4)]
    assert windows.doc_spans(10, 4, 8) == [(0, 4), (4, 4), (8, 2)]  # the stride never skips pieces
    assert windows.doc_spans(0, 4, 3) == [(0, 0)]  # an empty context still gets a window
    # The original's example: "bought" (position 7) has 1 left / 3 right context in window C, 4 / 0 in B.
    spans = [(0, 5), (3, 5), (6, 5)]
    assert windows.max_context_windows(spans, 11)[7] == 2
    assert windows.max_context_windows(spans, 11)[4] == 1


@pytest.mark.parametrize("window, stride, message", [
    (126, 126, "doc_stride=126 must be >= 1 and less than the window (126 word pieces"),
    (126, 0, "doc_stride=0 must be >= 1"),
    (0, 1, "the window holds 0 word pieces"),
])
def test_strides_that_do_not_overlap_are_refused(window, stride, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        windows.check_stride(window, stride)
    windows.check_stride(126, 64)  # overlapping windows pass
