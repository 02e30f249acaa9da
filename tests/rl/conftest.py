"""Fixtures of the RL tests (defined in rl_fixtures.py so the plugin tests can reuse them)."""

from rl_fixtures import env, processor, scripted_tokens, task_image, tiny_model_dir  # noqa: F401
