"""``python -m promptprism``: the same command as ``promptprism``."""

from .cli import run

if __name__ == "__main__":  # pragma: no cover - exercised through a subprocess in the tests
    run()
