"""python -m cuarray: the command line of the Python module.

    python -m cuarray info [-device SPEC] [-json]

mirrors ``cuarray info``: the device the spec opens ("" is cuda:0 when a
GPU answers and the library was built with -tags cuda, else sim:0), the
library it runs on, and the device's ledger.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

import cuarray


def info(spec: str, as_json: bool) -> int:
    """Prints what ``cuarray info`` prints, in its format: the device's lines,
    then the library's path, then the ledger's table. Returns the exit status."""
    dev = cuarray.device(spec)
    ledger = dev.ledger()
    report = {"device": ledger.get("name", spec), "spec": spec, "library": cuarray._lib._name, "ledger": ledger}
    if as_json:
        json.dump(report, sys.stdout, indent=2)
        print()
        return 0
    # the lines of Go's `cuarray info`, and the library this module loaded
    print(dev.info(), end="")
    print("library     %s" % report["library"])
    print()
    print(dev.ledger_report(), end="")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    """Runs the command line; returns the exit status (2 for a bad command
    line, 1 when the library fails)."""
    parser = argparse.ArgumentParser(prog="python -m cuarray", description="cuarray's Python module: what it sees.",
                                     epilog="examples: python -m cuarray info; python -m cuarray info -device sim:0?mem=1GiB -json")
    sub = parser.add_subparsers(dest="command", metavar="info")
    p = sub.add_parser("info", help="the device, the library and the ledger",
                       description="The device the spec opens, the library it runs on, and the device's ledger.",
                       epilog="examples: python -m cuarray info; python -m cuarray info -device sim:1 -json")
    p.add_argument("-device", default="", metavar="SPEC", help='device spec: sim:0, sim:0?mem=256MiB, cuda:0; "" (the default) picks cuda:0 if present, else sim:0')
    p.add_argument("-json", action="store_true", help="print JSON instead of text")
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_usage(sys.stderr)
        print("python -m cuarray: want a command: info", file=sys.stderr)
        return 2
    try:
        return info(args.device, args.json)
    except (cuarray.CuarrayError, ValueError, TypeError) as e:
        print("python -m cuarray %s: %s" % (args.command, e), file=sys.stderr)
        return 2 if "bad device spec" in str(e) else 1  # as cuarray info: a bad spec is a usage error


if __name__ == "__main__":
    sys.exit(main())
