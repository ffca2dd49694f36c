"""``onsei report``: a run summary and a self-contained HTML report."""
