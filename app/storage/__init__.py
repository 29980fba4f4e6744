"""Persistence: the only package that imports SQLAlchemy and Alembic."""
