"""``jax.monitoring``: event listeners. minijax records no events of its own, but a
library's ``record_event*`` calls reach the listeners registered here, as in jax."""

from __future__ import annotations

import time
from collections.abc import Callable
import contextlib

__all__ = ["clear_event_listeners", "record_event", "record_event_duration_secs",
           "record_event_time_span", "record_scalar", "register_event_duration_secs_listener",
           "register_event_listener", "register_event_time_span_listener",
           "register_scalar_listener", "unregister_event_duration_listener",
           "unregister_event_listener", "unregister_event_time_span_listener",
           "unregister_scalar_listener"]

_event: list[Callable] = []
_duration: list[Callable] = []
_time_span: list[Callable] = []
_scalar: list[Callable] = []


def record_event(event: str, **kwargs) -> None:
    for fn in list(_event):
        fn(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs) -> None:
    for fn in list(_duration):
        fn(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float, **kwargs) -> None:
    for fn in list(_time_span):
        fn(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value: float | int, **kwargs) -> None:
    for fn in list(_scalar):
        fn(event, value, **kwargs)


def register_event_listener(callback: Callable) -> None:
    _event.append(callback)


def register_event_duration_secs_listener(callback: Callable) -> None:
    _duration.append(callback)


def register_event_time_span_listener(callback: Callable) -> None:
    _time_span.append(callback)


def register_scalar_listener(callback: Callable) -> None:
    _scalar.append(callback)


def unregister_event_listener(callback: Callable) -> None:
    _event.remove(callback)


def unregister_event_duration_listener(callback: Callable) -> None:
    _duration.remove(callback)


def unregister_event_time_span_listener(callback: Callable) -> None:
    _time_span.remove(callback)


def unregister_scalar_listener(callback: Callable) -> None:
    _scalar.remove(callback)


def clear_event_listeners() -> None:
    for reg in (_event, _duration, _time_span, _scalar):
        reg.clear()


@contextlib.contextmanager
def _timed(event: str):
    start = time.time()
    yield
    record_event_duration_secs(event, time.time() - start)
