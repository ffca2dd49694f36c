"""``onsei deploy``: the stages' deploy entries written from their specs."""
