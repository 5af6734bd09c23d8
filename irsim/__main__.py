"""``python -m irsim`` runs the same entry point as the ``irsim`` console script."""

from irsim.cli import main

if __name__ == "__main__":
    main()
