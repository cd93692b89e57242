"""``parquet_write`` pauses Python's cycle collector while it makes rows and gives it
back as it found it, also when the export fails."""

from __future__ import annotations

import gc

import pytest

from campaigns.exports.hf import _no_cycle_collection


@pytest.mark.parametrize("enabled", [True, False])
def test_collector_paused_inside_and_restored_after(enabled):
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        with _no_cycle_collection():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        with pytest.raises(RuntimeError), _no_cycle_collection():
            raise RuntimeError("the export failed")
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()
