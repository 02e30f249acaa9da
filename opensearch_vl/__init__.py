"""OpenSearch-VL: train and evaluate multimodal deep-search agents inside the frameworks you already run.

Importing this package has no side effects and loads no training framework. The pieces:

- `opensearch_vl.tools_env`: tools, turn parser, image store, episode runner, transcripts.
- `opensearch_vl.eval`: benchmarks, judge, reports, viewer.
- `opensearch_vl.sft` / `opensearch_vl.rl`: framework-free SFT and RL logic.
- `opensearch_vl.plugins.{llamafactory,verl,rllm}`: the thin adapters into those frameworks.
"""

__version__ = "0.1.0"
