"""word2vec: skip-gram and CBOW with negative sampling, evaluation, file formats, and warm starts."""
