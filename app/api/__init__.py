"""The HTTP adapter: ``create_app(settings)`` builds a FastAPI app over the service."""
