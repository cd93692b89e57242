"""The Prolific platform: ``client`` (HTTP), ``provider`` (operations), ``platform`` (the
Platform interface), ``studies`` (publishing, following the campaign, sync)."""
