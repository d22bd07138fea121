"""The error collision set-up raises: a ModelError, so callers that handle bad robot models handle it too."""
from ..core.exceptions import ModelError


class CollisionError(ModelError):
    """Collision geometry, an SRDF or a world object cannot be used; the message names the file, link or pair."""
