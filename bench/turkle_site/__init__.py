"""Minimal Django project for the Turkle peer in bench/worker_cycles.py.

The turkle wheel ships only the app; this project mirrors upstream's
turkle_site (same apps, middleware, context processors), reads the database
from the environment and runs with DEBUG off. It is copied into the
benchmark's temporary folder and run with the Turkle venv's python.
"""
