"""The requester's dashboard reads: progress, money, workers, arms."""
