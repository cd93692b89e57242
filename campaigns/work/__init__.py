"""HITs and assignments: publish, allocate, submit, expire, decide."""
