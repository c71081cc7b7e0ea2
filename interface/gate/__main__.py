"""`python3 -I /opt/gate -- pip install pandas`: the gate run from a copy of this folder.

Run as a folder, this file is not inside a package; it imports the folder as the package it
is (by the folder's own name), so the gate's modules keep their relative imports.
"""

import os
import sys

if __package__:
    from . import main
else:
    _here = os.path.dirname(os.path.abspath(__file__))
    sys.path[0] = os.path.dirname(_here)  # the folder's parent, instead of the folder itself
    main = __import__(os.path.basename(_here)).main

if __name__ == "__main__":
    sys.exit(main())
