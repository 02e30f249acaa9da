"""rLLM plugin: the OpenSearch-VL agent as an rLLM ``Workflow`` (``plugins/rllm/workflow.py``).

rLLM is installed from its GitHub source (it is not on PyPI); nothing here is imported by the core packages.
Import ``opensearch_vl.plugins.rllm.workflow`` to get :class:`VisionDeepResearchWorkflow`.
"""
