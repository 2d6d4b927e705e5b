"""`python -m neffld ...` and the `neffld` console script: the neffld
command-line program (every subcommand), compiled into the extension."""

import sys

from ._neffld import _main


def main() -> int:
    return _main(["neffld", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
