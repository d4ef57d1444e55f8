"""The image-zip reader: a zip of images with an optional labels.csv (filename,label). The upload check and
the listing of samples and labels (``describe``), decoding through a preprocessing recipe (``decode``);
``reader.ImageZipReader`` puts them behind the DatasetReader interface."""
