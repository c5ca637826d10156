"""A run's points on rows and in blobs, and what is stored beside them: the blob format (blobs),
requests, samples and readings as columns (columnar), points into rows and back (points), the
chosen operating point, the regression watch's record, and result files in and out (imports,
exports)."""
