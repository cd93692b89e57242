"""Money: the ledger's one writer (``ledger``), the budget, costs, fees applied, wages."""
