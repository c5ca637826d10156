"""A verdict's cause and the sweep's story, in words: the sentences of a step between configs."""

from __future__ import annotations

from analysis.causes import sweep_step_sentence


def test_a_lowered_setting_says_lowering():
    assert sweep_step_sentence([("max_num_seqs", 1024, 256)], "step_time", "scheduler_cap") == (
        "lowering max_num_seqs from 1024 to 256 moved the bottleneck from the engine's step time "
        "to the scheduler cap"
    )
