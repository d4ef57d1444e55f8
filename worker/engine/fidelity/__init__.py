"""Output-level fidelity of a compressed model against its golden model, streamed batch by batch.

- `compare`: `compare_models`, the one pass over the dataset that runs both models and folds every batch in;
- `params`: what a comparison is asked to compute (`FidelityParams`);
- `binding`: which outputs of the two models are compared, and how each is read (classification, sequence,
  regression);
- `accumulators`: the per-output running sums behind every metric;
- `table`: the per-sample table (KL, agreement, SQNR per sample);
- `sample_topk`: each sample's top-k classes under both models, for the sample inspector.
"""
