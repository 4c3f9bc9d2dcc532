"""The reference's persistent-kernel runtime (``mirage.mpk``) is out of scope in mirage-lab.

A script that imports it (``from mirage_lab.mpk.models.graph_builder import MirageModelConfig`` after changing
``import mirage`` to ``import mirage_lab``) gets this error at import time, naming what to use instead. Nothing
else imports this package.
"""

from mirage_lab.compat.notices import unsupported
from mirage_lab.compat.reference_api import MPK_ALTERNATIVE

raise unsupported("mirage.mpk (the persistent-kernel runtime)", MPK_ALTERNATIVE)
