"""Package layout: the repository's top-level folders are subpackages of one import root.

`tools_env/`, `eval/`, `plugins/`, `sft/` and `rl/` install as `opensearch_vl.tools_env`, `opensearch_vl.eval`, …
so nothing generic (an `eval` or `plugins` package) leaks into site-packages. Everything else is in pyproject.toml.
"""

from setuptools import find_packages, setup

ROOT = "opensearch_vl"
SUBPACKAGE_FOLDERS = ("tools_env", "eval", "plugins", "sft", "rl")

packages = [ROOT] + [f"{ROOT}.{name}" for name in find_packages(ROOT)]
package_dir = {ROOT: ROOT}
for folder in SUBPACKAGE_FOLDERS:
    packages.append(f"{ROOT}.{folder}")
    packages += [f"{ROOT}.{folder}.{name}" for name in find_packages(folder)]
    package_dir[f"{ROOT}.{folder}"] = folder

setup(packages=packages, package_dir=package_dir)
