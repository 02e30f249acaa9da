"""The built-in tools. Importing this package registers them (the registry does so lazily, on first lookup).

One module per tool family: ``visual`` (crop, sharpen, super_resolution, perspective_correct), ``layout``
(layout_parsing), ``search`` (text_search, web_search), ``visit``, ``image_search``, ``python``
(python_interpreter). Each tool's :class:`~opensearch_vl.tools_env.tool.ToolSpec` is declared next to it.
"""

from opensearch_vl.tools_env.tools import image_search, layout, python, search, visit, visual  # noqa: F401
