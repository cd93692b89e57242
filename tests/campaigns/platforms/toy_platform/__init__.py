"""Toy Crowd: a platform defined entirely in this folder, to prove that a platform is
one folder plus one registry line (``conftest.py``'s ``platform_register``).

- ``service.py``: the platform itself (outside qaportal, kept in memory), which refuses
  what it does not know;
- ``provider.py``: the operations carried out on it; ``fees.py``: its fee model;
- ``platform.py``: the ``Platform`` (publishing, sync, credentials, worker pages);
- ``work.py``, ``views.py``, ``urls.py``: the worker entry and the webhook receiver.
"""
