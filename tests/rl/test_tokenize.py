"""Token-exact trajectories on the tiny local Qwen3-VL: masks, image-token expansion, append-only
exactness."""

from __future__ import annotations

import asyncio

from opensearch_vl.rl.agent import RLAgentSettings, build_reward, rollout
from opensearch_vl.rl.token_policy import TokenPolicy
from opensearch_vl.rl.tokenize import ChatRenderer, image_token_count, multi_modal_inputs
from opensearch_vl.tools_env.observation import transcript_messages
from opensearch_vl.tools_env.task import Task

ZOOM_CALL = '<think>zoom in</think><tool_call>{"name": "zoom", "arguments": {"image": "img_%d"}}</tool_call>'
SEARCH_CALL = '<think>look it up</think><tool_call>{"name": "search", "arguments": {"q": "x"}}</tool_call>'
ANSWER = "<think>done</think><response>blue</response>"


def run(processor, scripted_tokens, env, image, turns, settings=None):
    settings = settings or RLAgentSettings()
    backend = scripted_tokens(processor.tokenizer, turns)
    policy = TokenPolicy(ChatRenderer(processor), backend)
    task = Task(id="t1", question="What colour is the square?", images=[image], answers=["blue"])
    transcript, scored = asyncio.run(rollout(policy, task, env, settings, build_reward(settings)))
    return transcript, scored, policy, backend


def pad_count(processor, ids):
    pad = processor.tokenizer.convert_tokens_to_ids(processor.image_token)
    return sum(1 for t in ids if t == pad)


def test_every_image_reaches_the_row_with_exact_token_expansion(processor, scripted_tokens, env, task_image):
    turns = [ZOOM_CALL % 1, ZOOM_CALL % 2, ANSWER]
    transcript, scored, policy, backend = run(processor, scripted_tokens, env, task_image, turns)
    assert transcript.termination == "answer" and len(transcript.images) == 3
    row = policy.trajectory.assemble(scored.outcome.kept_steps)
    assert len(row.images) == 3  # task image + two zooms, in order
    assert [im.size for im in row.images] == [(96, 64), (48, 32), (24, 16)]
    mm = multi_modal_inputs(processor, row.images)
    ids = row.prompt_ids + row.response_ids
    assert pad_count(processor, ids) == image_token_count(processor, mm["image_grid_thw"])
    assert mm["pixel_values"].shape[0] == int(mm["image_grid_thw"].prod(dim=1).sum())
    # each image's pad run has exactly the length its own grid gives, in order
    pad = processor.tokenizer.convert_tokens_to_ids(processor.image_token)
    runs, current = [], 0
    for t in ids + [-1]:
        if t == pad:
            current += 1
        elif current:
            runs.append(current)
            current = 0
    merge = processor.image_processor.merge_size
    assert runs == [int(g.prod()) // merge**2 for g in mm["image_grid_thw"]]
    # the generation server saw every image of the conversation so far, in order
    assert [len(images) for _, images in backend.calls] == [1, 2, 3]


def test_row_is_what_the_model_saw_and_masks_only_model_tokens(processor, scripted_tokens, env, task_image):
    turns = [ZOOM_CALL % 1, ANSWER]
    transcript, scored, policy, backend = run(processor, scripted_tokens, env, task_image, turns)
    row = policy.trajectory.assemble(scored.outcome.kept_steps)
    # the last prompt sent to the server is exactly the row up to the last completion
    last_prompt, _ = backend.calls[-1]
    start, end = row.step_spans[-1]
    assert row.prompt_ids + row.response_ids[:start] == last_prompt
    # ... and equals a fresh render of the whole conversation (the template is append-only)
    renderer = ChatRenderer(processor)
    messages = transcript_messages(transcript)[:-1]  # without the final assistant turn
    rendered, _ = renderer.render(messages, add_generation_prompt=True)
    assert rendered == last_prompt
    # mask: 1 exactly on the generated ids of each step, 0 on the observation in between
    for (s, e), (_, images) in zip(row.step_spans, backend.calls):
        assert all(m == 1 for m in row.response_mask[s:e])
    between = row.response_mask[row.step_spans[0][1] : row.step_spans[1][0]]
    assert between and not any(between)
    assert sum(row.response_mask) == sum(e - s for s, e in row.step_spans)
    assert row.response_logprobs is not None and len(row.response_logprobs) == len(row.response_ids)


def test_fatal_cascade_masks_from_the_fatal_step(processor, scripted_tokens, env, task_image):
    turns = [ZOOM_CALL % 1, SEARCH_CALL, SEARCH_CALL, SEARCH_CALL]
    transcript, scored, policy, _ = run(processor, scripted_tokens, env, task_image, turns)
    assert transcript.termination == "fatal_cascade" and transcript.fatal_step_index == 1
    assert scored.outcome.is_fatal and scored.outcome.kept_steps == 1
    row = policy.trajectory.assemble(scored.outcome.kept_steps)
    spans = row.step_spans
    assert len(spans) == 4
    assert all(row.response_mask[i] == 1 for i in range(*spans[0]))
    assert not any(row.response_mask[spans[1][0] :])  # fatal step and everything after leave the loss
    # only the pre-fatal step is format-scored; r_acc 0 (no answer) → reward 0
    assert scored.reward.scored_steps == 1 and scored.reward.r_fmt == 1.0 and scored.reward.total == 0.0


def test_truncation_never_splits_an_image(processor, scripted_tokens, env, task_image):
    turns = [ZOOM_CALL % 1, ZOOM_CALL % 2, ANSWER]
    _, scored, policy, _ = run(processor, scripted_tokens, env, task_image, turns)
    full = policy.trajectory.assemble(3)
    cut = full.step_spans[1][0] + 3  # inside the second completion
    row = policy.trajectory.assemble(3, max_response_length=cut)
    assert row.truncated and len(row.response_ids) == cut
    mm = multi_modal_inputs(processor, row.images)
    assert pad_count(processor, row.prompt_ids + row.response_ids) == image_token_count(
        processor, mm["image_grid_thw"]
    )
    assert len(row.images) == 2
