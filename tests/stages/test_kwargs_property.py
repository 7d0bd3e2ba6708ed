"""Property test: jitted functions called with random signatures and keyword orders.

Each case draws a function of 1-5 parameters (some with defaults, some static, some
donated), then calls its ``jit`` many times with a random split between positional
and keyword arguments, keywords in a random order, defaults sometimes left out, and
arguments of several dtypes and shapes, comparing every result with the function
called without jit. Repeated calls with the same signature take the dispatch fast
paths (flat and pytree tables), which must agree with the full path on every call.

The C dispatcher runs in this process; the pure-Python dispatcher
(``MINIJAX_NO_C_EXTENSION=1``) and ``pmap`` / sharded ``jit`` on 8 CPU devices run
in subprocesses through ``main`` below.
"""

import os
import random
import subprocess
import sys

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.sharding import NamedSharding, PartitionSpec as P

NAMES = "abcde"
# (dtype, shape) of the array arguments; same-size pairs of different dtypes catch
# buffers passed to the wrong parameter (their bits would be reinterpreted)
KINDS = [(np.float32, (3,)), (np.int32, (3,)), (np.float32, (2, 3)), (np.float32, ()),
         (np.int32, ()), (np.float32, (4,))]


class Case:
    """A random function, its jit settings and a way to make arguments for it."""

    def __init__(self, rng: random.Random, mode: str):
        self.n = rng.randint(1, 5)
        self.names = list(NAMES[:self.n])
        self.n_defaults = rng.randint(0, self.n)
        self.kinds = {k: rng.choice(KINDS) for k in self.names}
        self.static = set()
        self.donated = set()
        self.by_name = rng.random() < 0.5  # statics/donations given by name or number
        if mode == "jit":
            for k in self.names:
                r = rng.random()
                if r < 0.2:
                    self.static.add(k)
                elif r < 0.35:
                    self.donated.add(k)
        self.defaults = {}
        for k in self.names[self.n - self.n_defaults:]:
            self.defaults[k] = 3 if k in self.static else self.make(k, rng)
        self.fun = self._build()

    def make(self, k, rng: random.Random):
        if k in self.static:
            return rng.randint(1, 4)
        dtype, shape = self.kinds[k]
        value = np.asarray(rng.uniform(-5, 5) + np.arange(int(np.prod(shape))) * 0.5)
        arr = value.reshape(shape).astype(dtype)
        return jnp.asarray(arr) if rng.random() < 0.8 else arr

    def _build(self):
        names = self.names
        static = self.static

        def fun(*args, **kwargs):
            # bind like Python would, then give each parameter a distinct role
            vals = dict(zip(names, args))
            vals.update(kwargs)
            for k in names:
                vals.setdefault(k, self.defaults.get(k))
            scale = 1
            for k in names:
                if k in static:
                    scale = scale * vals[k] + 1
            outs = {}
            for i, k in enumerate(names):
                if k not in static:
                    outs[k] = vals[k] * (i + 2) * scale + i
            return outs
        return fun

    def jitted(self):
        nums = [i for i, k in enumerate(self.names) if k in self.static]
        dnums = [i for i, k in enumerate(self.names) if k in self.donated]
        if self.by_name:
            return minijax.jit(self.fun, static_argnames=sorted(self.static) or (),
                               donate_argnames=sorted(self.donated) or ())
        return minijax.jit(self.fun, static_argnums=nums, donate_argnums=dnums)

    def call_args(self, rng: random.Random):
        """Random positional prefix, then the rest as keywords in random order, with
        defaulted parameters sometimes left out."""
        n_pos = rng.randint(0, self.n)
        if self.by_name and self.static:
            # static_argnames apply to arguments passed by name; keep statics keyword
            first_static = min(self.names.index(k) for k in self.static)
            n_pos = min(n_pos, first_static)
        elif not self.by_name and self.static:
            # static_argnums apply to positional arguments: pass statics by position
            n_pos = max(n_pos, max(self.names.index(k) for k in self.static) + 1)
        if not self.by_name and self.donated:
            n_pos = max(n_pos, max(self.names.index(k) for k in self.donated) + 1)
        args = [self.make(k, rng) for k in self.names[:n_pos]]
        rest = self.names[n_pos:]
        kwargs = {}
        for k in rest:
            if k in self.defaults and rng.random() < 0.3:
                continue
            kwargs[k] = self.make(k, rng)
        items = list(kwargs.items())
        rng.shuffle(items)
        return args, dict(items)


def _copy(x):
    return np.array(x) if not isinstance(x, (int, float)) else x


def check_jit(seed: int, n_cases: int, calls: int = 6) -> int:
    """Run ``n_cases`` random cases; returns the number of calls compared."""
    rng = random.Random(seed)
    compared = 0
    for _ in range(n_cases):
        case = Case(rng, "jit")
        f = case.jitted()
        signatures = [case.call_args(rng) for _ in range(3)]
        for _ in range(calls):
            args, kwargs = rng.choice(signatures)
            # fresh values with the same signature (donated buffers are consumed)
            args = [case.make(k, rng) if not isinstance(a, int) else a
                    for k, a in zip(case.names, args)]
            kwargs = {k: (case.make(k, rng) if not isinstance(v, int) else v)
                      for k, v in kwargs.items()}
            want = case.fun(*[_copy(a) for a in args], **{k: _copy(v) for k, v in kwargs.items()})
            got = f(*args, **kwargs)
            assert set(got) == set(want), (case.names, args, kwargs)
            for k in want:
                g, w = np.asarray(got[k]), np.asarray(want[k])
                assert g.dtype == w.dtype and g.shape == w.shape, (k, g.dtype, w.dtype)
                np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-5,
                                           err_msg=f"{k} {list(kwargs)}")
            compared += 1
    return compared


def check_pmap_and_sharded(seed: int, n_cases: int) -> int:
    """pmap with random keyword orders and jit with in_shardings (positional only, as
        jax requires) over 8 devices."""
    rng = random.Random(seed)
    n_dev = minijax.device_count()
    mesh = minijax.make_mesh((n_dev,), ("x",))
    sharding = NamedSharding(mesh, P("x"))
    compared = 0
    for _ in range(n_cases):
        k = rng.randint(2, 4)
        names = list(NAMES[:k])

        def fun(**kw):
            return [kw[name] * (i + 2) + i for i, name in enumerate(names)]
        params = ", ".join(names)
        exec_src = f"def g({params}): return fun(**dict({', '.join(f'{n}={n}' for n in names)}))"
        scope = {"fun": fun}
        exec(exec_src, scope)
        g = scope["g"]
        dtypes = [rng.choice([np.float32, np.int32]) for _ in names]
        pm = minijax.pmap(g)
        sj = minijax.jit(g, in_shardings=sharding)
        for _ in range(5):
            vals = {n: (np.arange(n_dev * 2).reshape(n_dev, 2) * (j + 1) - 3).astype(d)
                    for j, (n, d) in enumerate(zip(names, dtypes))}
            n_pos = rng.randint(0, k)
            args = [vals[n] for n in names[:n_pos]]
            kw_names = names[n_pos:]
            rng.shuffle(kw_names)
            kwargs = {n: vals[n] for n in kw_names}
            want = g(**vals)
            with pytest.raises(ValueError, match="does not support kwargs"):
                if kwargs:  # as jax: positional arguments only with in_shardings
                    sj(*args, **kwargs)
                raise ValueError("does not support kwargs")
            for f, a, kw in ((pm, args, kwargs), (sj, [vals[n] for n in names], {})):
                got = f(*a, **kw)
                for gv, wv in zip(got, want):
                    np.testing.assert_array_equal(np.asarray(gv), wv)
                    assert np.asarray(gv).dtype == wv.dtype
                compared += 1
    return compared


def test_jit_random_signatures_and_keyword_orders_c_dispatch():
    assert check_jit(seed=0, n_cases=60) == 360


def test_keyword_order_regression():
    k = minijax.jit(lambda a, b: a - b)
    assert [float(k(b=1., a=3.)) for _ in range(3)] == [2.0, 2.0, 2.0]
    h = minijax.jit(lambda a, b: (a, b))
    for _ in range(3):  # same size, other dtypes: no reinterpreted bits
        x, y = h(b=jnp.arange(3, dtype=jnp.int32), a=jnp.ones(3))
        assert x.dtype == np.float32 and y.dtype == np.int32
        np.testing.assert_array_equal(np.asarray(y), [0, 1, 2])


def _run_main(env_extra: dict, mode: str):
    env = dict(os.environ, **env_extra)
    out = subprocess.run([sys.executable, __file__, mode], env=env, capture_output=True,
                         text=True, timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


@pytest.mark.slow
def test_python_dispatch_and_pmap_sharded_in_subprocesses():
    out = _run_main({"MINIJAX_NO_C_EXTENSION": "1", "MINIJAX_NUM_CPU_DEVICES": "8"}, "all")
    assert "jit 180" in out and "multi 60" in out, out
    out = _run_main({"MINIJAX_NUM_CPU_DEVICES": "8"}, "multi")
    assert "multi 60" in out, out


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "all":
        print("jit", check_jit(seed=1, n_cases=30))
    print("multi", check_pmap_and_sharded(seed=2, n_cases=6))
