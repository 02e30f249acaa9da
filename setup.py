"""Package layout: the repository's top-level folders are subpackages of one import root.

`tools_env/`, `eval/`, `plugins/`, `sft/` and `rl/` install as `opensearch_vl.tools_env`, `opensearch_vl.eval`, …
so nothing generic (an `eval` or `plugins` package) leaks into site-packages. Everything else is in pyproject.toml.
"""

from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

ROOT = "opensearch_vl"
SUBPACKAGE_FOLDERS = ("tools_env", "eval", "plugins", "sft", "rl")

packages = [ROOT] + [f"{ROOT}.{name}" for name in find_packages(ROOT)]
package_dir = {ROOT: ROOT}
for folder in SUBPACKAGE_FOLDERS:
    packages.append(f"{ROOT}.{folder}")
    packages += [f"{ROOT}.{folder}.{name}" for name in find_packages(folder)]
    package_dir[f"{ROOT}.{folder}"] = folder

# Start-up files for site-packages (the LLaMA-Factory plugin's lazy import hook; see
# plugins/llamafactory/import_hook.py). They must sit at the wheel root, next to the packages, which
# package_data cannot do, so both the regular and the editable (PEP 660) build copy them there.
SITE_FILES = sorted(Path("plugins/llamafactory/site").glob("opensearch_vl_llamafactory.*"))


class BuildPyWithSiteFiles(build_py):
    def run(self):
        super().run()
        if not self.editable_mode:
            for path in SITE_FILES:
                self.copy_file(str(path), str(Path(self.build_lib, path.name)))


class EditableWheelWithSiteFiles(editable_wheel):
    def _run_build_commands(self, dist_name, unpacked_wheel, build_lib, tmp_dir):
        result = super()._run_build_commands(dist_name, unpacked_wheel, build_lib, tmp_dir)
        for path in SITE_FILES:
            self.copy_file(str(path), str(Path(unpacked_wheel, path.name)))
        return result


setup(
    packages=packages,
    package_dir=package_dir,
    cmdclass={"build_py": BuildPyWithSiteFiles, "editable_wheel": EditableWheelWithSiteFiles},
)
