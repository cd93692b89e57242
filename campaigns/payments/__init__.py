"""The ledger's arithmetic: costs, fees applied, wages and budgets."""
