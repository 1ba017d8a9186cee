"""Build hook: the ledger schema lives in assets/ (one copy, beside the README's screenshots) and
is packaged into the wheel as labs/core/ledger.schema.json, where labs.core.state finds it."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SCHEMA = Path(__file__).parent / "assets" / "ledger.schema.json"
DATA_FILES = ("published_numbers.json", "zero_bubble.json", "nccl_busbw.json")  # labs.core.engine.datafiles.FILES


class BuildWithSchema(build_py):
    def run(self):
        super().run()
        target = Path(self.build_lib) / "labs" / "core" / SCHEMA.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SCHEMA, target)
        # The reference data the engine and the labs read at run time (labs.core.engine.datafiles):
        # tests/data is outside the package, and a browser build has only the wheel.
        data = Path(self.build_lib) / "labs" / "core" / "engine" / "data"
        data.mkdir(parents=True, exist_ok=True)
        for name in DATA_FILES:
            shutil.copyfile(Path(__file__).parent / "tests" / "data" / name, data / name)


setup(cmdclass={"build_py": BuildWithSchema})
