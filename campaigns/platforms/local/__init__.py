"""The built-in local workforce: ``provider`` (operations that move no money) and
``platform`` (the Platform interface)."""
