"""Fallback entry point without the `.pth` hook: `python -m opensearch_vl.plugins.llamafactory train
recipe.yaml`.

Registers the templates in this process, then runs LLaMA-Factory's own CLI with the same arguments. Only
in-process runs see the registration: torchrun and Ray workers start fresh interpreters and need the `.pth`
hook (`pip install` puts it in place; check with `opensearch-vl sft doctor`).
"""

import sys


def main() -> int:
    """Register, then hand over to `llamafactory.cli.main`."""
    from opensearch_vl.plugins.llamafactory.import_hook import install

    install()
    from llamafactory.cli import main as llamafactory_main

    sys.argv = ["llamafactory-cli", *sys.argv[1:]]
    return llamafactory_main() or 0


if __name__ == "__main__":
    sys.exit(main())
