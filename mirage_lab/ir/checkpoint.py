"""Reference checkpoint import (in progress)."""


def load_reference_checkpoint(path, era=None):
    raise NotImplementedError
