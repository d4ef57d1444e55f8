"""Task adapters: what a model's outputs mean for its task, and the task's own metrics.

A task decodes both models' outputs into task predictions (classes, boxes, masks, transcripts, text) and
scores the compressed model's against ground truth and against the golden model's. Classification is the
first (`classification`: per-class damage, confusion, confident flips); the task-metrics issue adds
detection, segmentation, speech, signal and image outputs here, and the language-model issue its task.
"""
