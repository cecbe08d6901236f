"""Progress on long work (embed, connect, import, evaluation): every such library call takes
``progress=`` — ``False`` or ``None`` (the default: silent), ``True`` (a ``tqdm.auto`` bar: a widget
bar in a notebook, a text bar on a terminal) or a ``progress(done, total)`` callback of your own (the
CLI passes its bar or scheduler log lines).

>>> progress_callback(False) is None, progress_callback(None) is None
(True, True)
>>> seen = []
>>> report = progress_callback(lambda done, total: seen.append((done, total)))
>>> report(1, 2); seen
[(1, 2)]
"""

from __future__ import annotations

from typing import Callable, Union

from kbtools.errors import ValidationError

__all__ = ["Progress", "progress_callback"]

#: What ``progress=`` accepts.
Progress = Union[bool, None, Callable[[int, int], None]]


def progress_callback(progress: Progress, label: str = "working", *, unit: str = "entry") -> Callable[[int, int], None] | None:
    """The ``progress(done, total)`` callback for a ``progress=`` argument, or None for silence.

    ``True`` gives a ``tqdm.auto`` bar named ``label`` that closes itself when ``done`` reaches ``total``.

    >>> bar = progress_callback(True, "embed")
    >>> callable(bar)
    True
    >>> progress_callback("yes")
    Traceback (most recent call last):
    ...
    kbtools.errors.ValidationError: progress='yes': progress is True, False, None or a callable progress(done, total)
    """
    if progress is None or progress is False:
        return None
    if progress is True:
        return _tqdm_bar(label, unit)
    if callable(progress):
        return progress
    raise ValidationError("progress", progress, "progress is True, False, None or a callable progress(done, total)")


def _tqdm_bar(label: str, unit: str) -> Callable[[int, int], None]:
    from tqdm.auto import tqdm

    state: dict = {}

    def update(done: int, total: int) -> None:
        bar = state.get("bar")
        if bar is None:
            bar = state["bar"] = tqdm(total=total, desc=label, unit=unit, leave=True)
        bar.total = total
        bar.update(max(0, done - bar.n))
        if done >= total:
            bar.close()

    return update
