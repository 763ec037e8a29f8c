"""Progress of a long job (training, prediction, data creation, extraction): done / total, rate and ETA.

On a terminal (stderr is a TTY and TERM is not `dumb`) one line is redrawn in place, at most every
`REDRAW_SECONDS` (0.5 s): a carriage return, the text, and "clear to the end of the line" (`ESC [K`):

    training  120/350 steps  34%  5.20 steps/s  ETA 0:00:44

A log record written through absl's handler (the metric lines, warnings) first clears that line, so it is
never written into the middle of one; the next update draws the line again below the record. When the job
ends, the line is drawn a last time with the elapsed time instead of the ETA and kept:

    training  350/350 steps  100%  5.11 steps/s  in 0:01:08

Otherwise (output redirected to a file or a pipe) the same text is an INFO log line (absl's format: a
timestamp, no control characters), every `LOG_SECONDS` (30 s) and once at the end. A job that ends within
`QUIET_SECONDS` (1 s) shows nothing. Set TERM=dumb to get the log lines on a terminal too.

The rate is measured over the updates of the last `RATE_WINDOW_SECONDS` (30 s). The time up to the first
update is left out (start-up: tracing, compiling, reading the first batch), so the rate and the ETA
(what is left / the rate) appear from the second update on; the final line's rate is the average of the
whole run.
"""

import collections
import os
import sys
import time

from absl import logging

REDRAW_SECONDS = 0.5
LOG_SECONDS = 30.0
QUIET_SECONDS = 1.0
RATE_WINDOW_SECONDS = 30.0
_CLEAR_LINE = "\r\x1b[K"

_drawn_on = None  # the terminal stream whose last line is a progress line, or None


def _clear_drawn_line():
    global _drawn_on
    if _drawn_on is not None:
        _drawn_on.write(_CLEAR_LINE)
        _drawn_on.flush()
        _drawn_on = None


def _clear_before_log(record):
    """absl handler filter: clears a drawn progress line before the record is written (lets every record
    through)."""
    _clear_drawn_line()
    return True


def _is_terminal(stream):
    return stream.isatty() and os.environ.get("TERM") != "dumb"


def _duration(seconds):
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _number(value):
    return f"{value}" if isinstance(value, int) else f"{value:.1f}"


def _rate(value):
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


class Progress:
    """The progress of a job of `total` units (steps, examples, MB, ...), shown as the module docstring says.

    description: the job, first on the line ("training"); unit: the units' name ("steps").
    done: units already done when the job starts (e.g. the step a training run resumes at).
    stream: where a terminal's line is drawn (sys.stderr, where absl logs); clock: seconds (time.monotonic).

    Call `update(done)` or `advance(n)` as units complete, `close()` at the end, or use it as a context
    manager (leaving by an exception clears the line instead, for the error that follows).
    """

    def __init__(self, description, total, unit, done=0, stream=None, clock=time.monotonic):
        self.description, self.total, self.unit, self.done = description, total, unit, done
        self.detail = ""
        self._stream = stream or sys.stderr
        self._clock = clock
        self._terminal = _is_terminal(self._stream)
        if self._terminal:
            handler = logging.get_absl_handler()
            if _clear_before_log not in handler.filters:
                handler.addFilter(_clear_before_log)
        self._start, self._start_done = clock(), done
        self._shown = self._start  # when the line was last drawn or logged
        self._samples = collections.deque([(self._start, done)])  # (time, done) of recent updates
        self._start_in_window = True  # the creation is still the first sample

    def advance(self, count=1, detail=None):
        """`count` more units done; see `update`."""
        self.update(self.done + count, detail)

    def update(self, done, detail=None):
        """`done` units done so far; `detail`: a short text to append to the line (e.g. counts), kept until
        replaced. Draws or logs the line when it is due."""
        now = self._clock()
        self.done = done
        if detail is not None:
            self.detail = detail
        self._samples.append((now, done))
        while len(self._samples) > 2 and self._samples[1][0] <= now - RATE_WINDOW_SECONDS:
            self._samples.popleft()
            self._start_in_window = False
        if now - self._start < QUIET_SECONDS:
            return
        if self._terminal:
            if _drawn_on is not self._stream or now - self._shown >= REDRAW_SECONDS:
                self._draw(self.text(), now)
        elif now - self._shown >= LOG_SECONDS:
            logging.info("%s", self.text())
            self._shown = now

    def rate(self):
        """Units per second over the recent updates (start-up left out), or None before a second update."""
        first = 1 if self._start_in_window else 0
        if len(self._samples) - first < 2:
            return None
        (start, start_done), (end, end_done) = self._samples[first], self._samples[-1]
        return (end_done - start_done) / (end - start) if end > start else None

    def text(self, final=False):
        """The progress line: description, done/total unit, percent, rate, then `ETA H:MM:SS` (or, `final`,
        the rate of the whole run and `in H:MM:SS`), then the detail."""
        parts = [self.description, f"{_number(self.done)}/{_number(self.total)} {self.unit}"]
        if self.total:
            parts.append(f"{int(100 * self.done / self.total)}%")
        elapsed = self._clock() - self._start
        rate = (self.done - self._start_done) / elapsed if final and elapsed > 0 else self.rate()
        if rate:
            parts.append(f"{_rate(rate)} {self.unit}/s")
        if final:
            parts.append(f"in {_duration(elapsed)}")
        elif rate and self.done < self.total:
            parts.append(f"ETA {_duration(max(self.total - self.done, 0) / rate)}")
        if self.detail:
            parts.append(self.detail)
        return "  ".join(parts)

    def _draw(self, text, now):
        global _drawn_on
        try:
            width = os.get_terminal_size(self._stream.fileno()).columns or 80  # 0: a terminal of unknown size
        except (AttributeError, OSError, ValueError):
            width = 80
        self._stream.write(_CLEAR_LINE + text[: width - 1])
        self._stream.flush()
        _drawn_on, self._shown = self._stream, now

    def close(self):
        """The final line (drawn and kept on a terminal, logged otherwise), unless the job took less than
        QUIET_SECONDS."""
        global _drawn_on
        if self._clock() - self._start < QUIET_SECONDS:
            if _drawn_on is self._stream:
                _clear_drawn_line()
            return
        text = self.text(final=True)
        if self._terminal:
            self._draw(text, self._clock())
            self._stream.write("\n")
            self._stream.flush()
            _drawn_on = None
        else:
            logging.info("%s", text)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, traceback):
        if exc_type is None:
            self.close()
        elif _drawn_on is self._stream:
            _clear_drawn_line()
