"""Framework-free SFT logic: the shared observation format, Qwen-VL tool-call text, image-token counts, data
checks, transcript -> ShareGPT conversion and the tiny Qwen3-VL builder. Nothing here imports LLaMA-Factory
(`opensearch_vl.plugins.llamafactory` is the only adapter); torch/transformers load only inside
`tiny_model.build_tiny_qwen3vl`.

Modules: `observation_format`, `qwen_chat_format`, `image_tokens`, `data_check`, `sharegpt`, `tiny_model`.

Example:
    >>> from opensearch_vl.sft.observation_format import render_observation_text
    >>> render_observation_text("done", 1)
    '<image>done'
"""
