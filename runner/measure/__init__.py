"""Turning what was recorded into figures: request metrics, the engine's queue samples,
hardware telemetry, answer quality and the printed summary.
"""
