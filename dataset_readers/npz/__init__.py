"""The .npz reader: an upload check from the array headers (``describe``), every array memory-mapped for
the jobs (``mapped``), a few rows for previews (``rows``), over the header parsing they share (``headers``);
``reader.NpzReader`` puts them behind the DatasetReader interface."""
