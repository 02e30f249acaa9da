"""LLaMA-Factory plugin: agentic multimodal chat templates, registered in every process by a `.pth` import
hook.

After `pip install opensearch-vl[sft]`, `template: qwen3_vl_agentic_nothink` (Qwen3-VL Instruct),
`qwen3_vl_agentic` (Qwen3-VL Thinking) and `qwen2_vl_agentic` (Qwen2/2.5-VL) work in plain
`llamafactory-cli train recipe.yaml`, including `FORCE_TORCHRUN=1` and `USE_RAY=1` runs. See `import_hook`
for the mechanism and `templates` for what the templates change. Importing this package is free: it imports
neither torch nor LLaMA-Factory.

Example:
    >>> from opensearch_vl.plugins.llamafactory import TEMPLATE_NAMES
    >>> TEMPLATE_NAMES[0]
    'qwen3_vl_agentic_nothink'
"""

TEMPLATE_NAMES = ("qwen3_vl_agentic_nothink", "qwen3_vl_agentic", "qwen2_vl_agentic")
"""Template names the plugin registers (kept in sync with `templates.TEMPLATE_NAMES` by a test)."""

__all__ = ["TEMPLATE_NAMES"]
