"""IS2, read: the entry's parameter values out of the question (template match and alignment, the draft, the
target model under its constraint), their validation, and the changed-reasoning guard."""
