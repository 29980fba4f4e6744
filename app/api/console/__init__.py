"""The web console at /ui/: status, traffic, history, scan and learn, accuracy.

``install(app, settings)`` adds it to the HTTP app; see ``access`` for sessions and roles.
"""

from app.api.console.access import install

__all__ = ["install"]
