"""Command line entry point: ``python -m minijax [COMMAND] [ARGS...]``.

With no command it runs the demo (see ``minijax/demo.py``). Subcommands are
registered in ``COMMANDS``: a name, a one-line help and a ``main(argv)`` taking
the remaining arguments and returning an exit status.
"""

from __future__ import annotations

import sys


def _demo(argv):
    from minijax import demo

    return demo.main(argv)


def _dot(argv):
    from minijax.stages import dot_graph

    return dot_graph.main(argv)


def _run(argv):
    from minijax import compat

    return compat.run(argv)


# name -> (help, main(argv) -> int). Add subcommands (e.g. "dot") here.
COMMANDS = {
    "demo": ("trace, lower, compile and run a small MLP loss (default)", _demo),
    "run": ("run a jax program on minijax: run SCRIPT [ARGS] | run -m MODULE [ARGS]", _run),
    "dot": ("draw a function's jaxpr or HLO graph with Graphviz (see dot --help)", _dot),
}
DEFAULT = "demo"


def _usage(file):
    print("usage: python -m minijax [COMMAND] [ARGS...]\n\ncommands:", file=file)
    for name, (text, _) in COMMANDS.items():
        print(f"  {name:<10} {text}", file=file)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help", "help"):
        _usage(sys.stdout)
        return 0
    name = argv.pop(0) if argv and not argv[0].startswith("-") else DEFAULT
    if name not in COMMANDS:
        print(f"minijax: unknown command {name!r}\n", file=sys.stderr)
        _usage(sys.stderr)
        return 2
    return COMMANDS[name][1](argv) or 0


if __name__ == "__main__":
    sys.exit(main())
