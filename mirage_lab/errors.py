"""The project's exception hierarchy.

Every error raised at the edge (builders, loaders, the CLI) is a ``MirageError``
whose message names what failed (op, tensor, dimension, rule) and how to fix it.
"""

from __future__ import annotations


class MirageError(Exception):
    """Base class of every error mirage_lab raises on purpose."""


class ShapeError(MirageError, ValueError):
    """An op's shape rule failed (SPEC §2, §3.3)."""


class MapError(MirageError, ValueError):
    """An imap / omap / forloop_dim is invalid or does not divide a dimension (SPEC §3.2)."""


class PhaseError(MirageError, ValueError):
    """Loop-phase and post-loop tensors were mixed, or a saver got a loop-phase tensor (SPEC §3.3)."""


class ResourceError(MirageError, ValueError):
    """A grid has too many blocks or a block graph needs too much shared memory (SPEC §1, §3.6)."""


class GraphError(MirageError, ValueError):
    """A graph is structurally invalid: a foreign tensor, a missing output, a wrong input count, …"""


class UnsupportedOpError(MirageError, ValueError):
    """An op is unknown, or is not available at the requested level or in the requested number system."""


class FormatError(MirageError, ValueError):
    """A JSON file (own format or reference checkpoint) is malformed, truncated, hostile or of an unknown era."""


class InputError(MirageError, ValueError):
    """Arrays passed to the interpreter do not match the graph's inputs."""


class ArgumentError(MirageError, TypeError):
    """A public function got an unknown or mistyped keyword, or an argument of the wrong kind."""


class PathError(InputError):
    """A path is of the wrong kind (a directory where a file belongs, or the reverse), missing or unwritable."""


class RunFolderError(MirageError, RuntimeError):
    """A run folder is held by another search, was edited since it was written, or cannot be written."""


class CacheError(MirageError, RuntimeError):
    """A private cache directory is not ours (another owner, or open to other users) and cannot be made safe."""


class DependencyError(MirageError, RuntimeError):
    """A package or system program a feature needs is missing or broken; the message names how to install it."""
