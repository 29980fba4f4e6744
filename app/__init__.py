"""spamfilter: a Naive Bayes spam filter that learns from every correction."""
