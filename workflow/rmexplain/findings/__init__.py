"""The findings: what each RM rewards and penalises, in words and numbers, with the edits behind each
(docs/findings.md). Read by the report's landing page and the explorer's first view."""
