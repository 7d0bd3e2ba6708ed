"""`python -m minijax` (minijax/demo.py): every stage, then grad, vmap and training."""

from minijax import demo


def test_demo_runs_every_stage_and_grad_and_vmap(capsys):
    assert demo.main() == 0
    out = capsys.readouterr().out
    for title in ("jaxpr:", "StableHLO:", "HLO:", "optimized HLO:", "grad: minijax.grad",
                  "vmap: per-example losses", "training:"):
        assert f"=== {title}" in out
    assert "finite difference" in out and "matches a Python loop: yes" in out
    assert out.rstrip().endswith("all checks: yes")
