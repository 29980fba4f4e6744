"""The service's settings: their schema, every field described (``schema``), and where
their values come from: file, environment, options (``loading``)."""
