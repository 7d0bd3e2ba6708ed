"""minijax.profiler: jaxlib's profiler writes a trace that holds our annotations and the
XLA ops of minijax's executables (with the jit name as the HLO module)."""

import glob
import gzip
import json
import os

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import profiler


def _events(log_dir):
    (pb,) = glob.glob(os.path.join(log_dir, "plugins", "profile", "*", "*.xplane.pb"))
    data = profiler.ProfileData.from_file(pb)
    return [(ev.name, dict(ev.stats)) for plane in data.planes for line in plane.lines
            for ev in line.events]


def test_trace_writes_xplane_with_annotations_and_jit_ops(tmp_path):
    def my_step(x):
        return jnp.sin(x) @ x
    f = minijax.jit(my_step)
    x = jnp.ones((16, 16))
    f(x).block_until_ready()

    @profiler.annotate_function
    def annotated():
        return f(x).block_until_ready()

    with profiler.trace(tmp_path, create_perfetto_trace=True):
        with profiler.StepTraceAnnotation("train", step_num=7):
            with profiler.TraceAnnotation("my_label", k=1):
                out = annotated()
    np.testing.assert_allclose(np.asarray(out), np.sin(np.ones((16, 16))) @ np.ones((16, 16)),
                               rtol=1e-5)
    events = _events(str(tmp_path))
    names = {n for n, _ in events}
    assert {"train", "my_label",
            "test_trace_writes_xplane_with_annotations_and_jit_ops.<locals>.annotated"} <= names
    assert dict(events)["train"]["step_num"] == 7
    assert dict(events)["my_label"]["k"] == 1
    modules = {s.get("hlo_module") for _, s in events}
    assert "jit_my_step" in modules
    (tj,) = glob.glob(str(tmp_path / "plugins/profile/*/*.trace.json.gz"))
    trace_names = {e.get("name") for e in json.load(gzip.open(tj))["traceEvents"]}
    assert "my_label" in trace_names
    (pf,) = glob.glob(str(tmp_path / "plugins/profile/*/perfetto_trace.json.gz"))
    assert "metadata" not in json.load(gzip.open(pf))


def test_start_stop_errors_like_jax(tmp_path):
    with pytest.raises(RuntimeError, match="No profile started"):
        profiler.stop_trace()
    profiler.start_trace(tmp_path)
    try:
        with pytest.raises(RuntimeError, match="already been started"):
            profiler.start_trace(tmp_path)
    finally:
        profiler.stop_trace()
    assert glob.glob(str(tmp_path / "plugins/profile/*/*.xplane.pb"))


def test_device_memory_profile_is_gzipped_pprof(tmp_path):
    keep = jnp.ones((1000,))  # noqa: F841  (a live buffer to profile)
    prof = profiler.device_memory_profile()
    assert prof[:2] == b"\x1f\x8b" and len(gzip.decompress(prof)) > 0
    profiler.save_device_memory_profile(tmp_path / "m.prof")
    assert (tmp_path / "m.prof").read_bytes()[:2] == b"\x1f\x8b"
