"""Lazy registration hook: registers our templates the moment LLaMA-Factory's template module is imported.

LLaMA-Factory 0.9.5 has no plugin mechanism: its registries (`TEMPLATES`, …) are plain module dicts, and
`llamafactory-cli train` can re-launch itself under `torchrun` (`FORCE_TORCHRUN=1`, several GPUs) or run the
trainer in Ray workers (`USE_RAY=1`), so registering from a wrapper process would not reach those workers.
Instead, `pip install opensearch-vl` puts `opensearch_vl_llamafactory.pth` into site-packages. Its one import
line runs at every interpreter start-up (parent, torchrun workers, Ray workers alike) and calls `install()`,
which only appends a tiny finder to `sys.meta_path`. The finder ignores every import except
`llamafactory.data.template`; when that module has executed, it calls
`opensearch_vl.plugins.llamafactory.templates.register(module)`. Processes that never import LLaMA-Factory pay
for importing this file and nothing else (no torch, no LLaMA-Factory).

Python 3.15+ (PEP 829) also reads `opensearch_vl_llamafactory.start`, which names `install` as an entry point;
a `.start` file with the same name disables the `.pth` import line, so the hook is installed exactly once.

Example:
    >>> from opensearch_vl.plugins.llamafactory import import_hook
    >>> import_hook.install()  # idempotent; a no-op if the .pth already ran
    >>> import_hook.is_installed()
    True
"""

from __future__ import annotations

import sys
from importlib.machinery import ModuleSpec, PathFinder

# Duck-typed finder/loader (no importlib.abc import): this module runs at every interpreter start-up.

__all__ = ["TARGET_MODULE", "install", "is_installed", "last_error"]

TARGET_MODULE = "llamafactory.data.template"
"""The upstream module whose execution triggers registration (it defines `TEMPLATES`)."""

_state: dict[str, BaseException | None] = {"error": None}
# Registry-style module state: the last registration failure, reported by the template lookup guard.


def _register(module) -> None:
    try:
        from opensearch_vl.plugins.llamafactory.templates import register

        register(module)
    except Exception as exc:  # a plugin bug must never break LLaMA-Factory for unrelated templates
        _state["error"] = exc
        import logging

        logging.getLogger(__name__).warning(
            "opensearch-vl could not register its LLaMA-Factory templates: %r. "
            "Run `opensearch-vl sft doctor` for details.",
            exc,
        )
        _explain_on_lookup(module, exc)


_PLUGIN_TEMPLATES = ("qwen3_vl_agentic_nothink", "qwen3_vl_agentic", "qwen2_vl_agentic")


def _explain_on_lookup(module, exc: BaseException) -> None:
    """Make a later lookup of one of our template names fail with the registration error.

    Without this, LLaMA-Factory would only say "Template … does not exist".
    """
    original = getattr(module, "get_template_and_fix_tokenizer", None)
    if original is None or getattr(original, "_opensearch_vl_explains", False):
        return

    def get_template_and_fix_tokenizer(tokenizer, data_args):
        if (
            getattr(data_args, "template", None) in _PLUGIN_TEMPLATES
            and data_args.template not in module.TEMPLATES
        ):
            from opensearch_vl.errors import PrerequisiteError

            raise PrerequisiteError(
                f"Template {data_args.template!r} belongs to opensearch-vl, whose registration failed in "
                "this "
                f"process: {exc!r}. Fix: check `opensearch-vl sft doctor`; the plugin supports "
                "llamafactory==0.9.5 (pip install 'opensearch-vl[sft]')."
            ) from exc
        return original(tokenizer, data_args)

    get_template_and_fix_tokenizer._opensearch_vl_explains = True
    module.get_template_and_fix_tokenizer = get_template_and_fix_tokenizer


class _RegisteringLoader:
    def __init__(self, wrapped) -> None:
        self._wrapped = wrapped

    def create_module(self, spec):
        return self._wrapped.create_module(spec)

    def exec_module(self, module) -> None:
        self._wrapped.exec_module(module)
        _register(module)

    def __getattr__(self, name):  # get_code, get_source, is_package, … for tracebacks and inspect
        return getattr(self._wrapped, name)


class LlamaFactoryTemplateFinder:
    """A `sys.meta_path` finder that reacts only to `llamafactory.data.template`."""

    def find_spec(self, fullname, path=None, target=None) -> ModuleSpec | None:
        """Delegate to the path finder for the target module and wrap its loader; ignore everything else."""
        if fullname != TARGET_MODULE:
            return None
        spec = PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _RegisteringLoader(spec.loader)
        return spec


def is_installed() -> bool:
    """Whether the finder is on `sys.meta_path` in this process.

    Example:
        >>> isinstance(is_installed(), bool)
        True
    """
    return any(isinstance(f, LlamaFactoryTemplateFinder) for f in sys.meta_path)


def last_error() -> BaseException | None:
    """The exception that made the last registration attempt fail in this process, if any.

    Example:
        >>> last_error() is None or isinstance(last_error(), Exception)
        True
    """
    return _state["error"]


def install() -> None:
    """Put the finder on `sys.meta_path` (idempotent); register at once if LLaMA-Factory is already imported.

    Example:
        >>> install(); install()
        >>> sum(isinstance(f, LlamaFactoryTemplateFinder) for f in sys.meta_path)
        1
    """
    if not is_installed():
        sys.meta_path.insert(0, LlamaFactoryTemplateFinder())
    module = sys.modules.get(TARGET_MODULE)
    if module is not None and hasattr(module, "TEMPLATES"):
        _register(module)
