"""Test configuration: hypothesis runs derandomized (the same examples on every run,
so CI is reproducible); `HYPOTHESIS_PROFILE=explore` searches with fresh random seeds
and more examples."""

import os

from hypothesis import settings

settings.register_profile("default", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None, max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
