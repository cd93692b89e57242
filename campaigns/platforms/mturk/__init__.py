"""The Mechanical Turk platform: ``client`` (boto3, loaded only where used), ``provider``
(operations), ``platform`` (the Platform interface), ``publish``, ``sync``, ``follow``,
``records``, ``work`` (the worker page entry) and ``csv/`` (batch CSVs)."""
