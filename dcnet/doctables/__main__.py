"""python -m dcnet.doctables [--check]: rewrite (or check) every generated table."""

import os
import sys

from dcnet import doctables


def main(argv):
    check = "--check" in argv
    doctables.load_all()
    stale = []
    for path in doctables.doc_files():
        with open(path) as f:
            text = f.read()
        new = doctables.rewrite_text(text)
        if new != text:
            rel = os.path.relpath(path, doctables.ROOT)
            stale.append(rel)
            if not check:
                with open(path, "w") as f:
                    f.write(new)
                print("rewrote", rel)
    if check and stale:
        print("stale generated tables in: " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
