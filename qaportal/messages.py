"""Django's message storage, its two backends made on first use (``MESSAGE_STORAGE``).

``MessageMiddleware`` gives every request a ``FallbackStorage``, which makes its cookie
and session backends at once; the cookie one builds a signer (settings, key derivation)
each time. A worker page neither reads nor adds a message, and a request that does
neither never touches the backends (``BaseStorage.update`` returns early), so here they
are made when first needed. Same backends, same cookie and session keys, same order.
"""

from __future__ import annotations

from typing import Any

from django.contrib.messages.storage.base import BaseStorage
from django.contrib.messages.storage.fallback import FallbackStorage
from django.utils.functional import cached_property


class LazyFallbackStorage(FallbackStorage):
    def __init__(self, request: Any, *args: Any, **kwargs: Any) -> None:
        BaseStorage.__init__(self, request, *args, **kwargs)
        self._backend_args = (request, *args)
        self._backend_kwargs = kwargs
        self._used_storages: set[Any] = set()

    @cached_property
    def storages(self) -> list[BaseStorage]:
        return [cls(*self._backend_args, **self._backend_kwargs) for cls in self.storage_classes]
