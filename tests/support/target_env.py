"""A throwaway Python environment for real installs in tests, made in milliseconds.

`venv` without ensurepip, plus the test's own pip linked into its site-packages and a `pip`
script, so real pip installs into it (sys.prefix is the new environment) without a copy of pip
being built or downloaded per test. `installed()` lists what is in it.
"""

from __future__ import annotations

import os
import sysconfig
import venv
from pathlib import Path

import pip

PIP_SCRIPT = "#!{python}\nimport sys\nfrom pip._internal.cli.main import main\nsys.exit(main())\n"


class TargetEnv:
    def __init__(self, root: Path):
        self.root = root
        venv.EnvBuilder(with_pip=False, symlinks=True).create(root)
        self.bin = root / "bin"
        self.python = self.bin / "python"
        self.site = Path(sysconfig.get_path("purelib", vars={"base": str(root), "platbase": str(root)}))
        os.symlink(Path(pip.__file__).parent, self.site / "pip")
        script = self.bin / "pip"
        script.write_text(PIP_SCRIPT.format(python=self.python))
        script.chmod(0o755)

    def installed(self) -> set[str]:
        """Canonical names of the distributions installed here (pip itself is only linked)."""
        return {p.name.split("-")[0].lower().replace("_", "-") for p in self.site.glob("*.dist-info")}
