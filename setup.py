"""Build hook: the ledger schema lives in assets/ (one copy, beside the README's screenshots) and
is packaged into the wheel as labs/core/ledger.schema.json, where labs.core.state finds it."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SCHEMA = Path(__file__).parent / "assets" / "ledger.schema.json"


class BuildWithSchema(build_py):
    def run(self):
        super().run()
        target = Path(self.build_lib) / "labs" / "core" / SCHEMA.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SCHEMA, target)


setup(cmdclass={"build_py": BuildWithSchema})
