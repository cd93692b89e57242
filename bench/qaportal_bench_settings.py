"""qaportal's settings, unchanged, with the benchmark's URLconf (see qaportal_bench_urls)."""

from qaportal.settings import *  # noqa: F403

ROOT_URLCONF = "qaportal_bench_urls"
