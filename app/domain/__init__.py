"""Pure domain logic: parsing, tokens, Naive Bayes maths, decisions. No I/O, no settings."""
