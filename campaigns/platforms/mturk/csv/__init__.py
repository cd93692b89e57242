"""MTurk batch CSVs: the format, import, review and export."""
