"""Reading datasets into the engine's arrays: memory-mapped .npz (`npz`) and image zips through a
preprocessing recipe (`images`)."""
