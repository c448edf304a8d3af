"""generation: Answers worded only from the labelled passages given."""
