"""Train the OpenSearch-VL agent with rLLM (AgentTrainer + VisionDeepResearchWorkflow) from an RL recipe.

    python recipes/rl/train_rllm.py --recipe recipes/rl/qwen3vl_8b.yaml
    actor_rollout_ref.model.path=/ckpt/sft-8b

Composes rLLM's verl config (``agent_ppo_trainer_megatron`` for Megatron recipes, ``agent_ppo_trainer`` for
FSDP ones) with the recipe's ``common`` + ``rllm`` overrides and your extras, loads the splits registered by
``opensearch-vl rl prepare FILE --out DIR --register NAME`` (``rllm.dataset``), and runs rLLM's verl-path
``AgentTrainer``; the ``opensearch_vl`` section becomes the workflow's ``agent`` settings.
Needs rLLM installed from source (``pip install --no-deps -e <rllm checkout>``; tested at 9beb6e0f).
"""

import argparse

from opensearch_vl.plugins.rllm.train import train

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", required=True, help="recipes/rl/<size>.yaml")
    args, extra = parser.parse_known_args()
    train(args.recipe, extra)
