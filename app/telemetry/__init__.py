"""What the service's events become: the verdict log and Prometheus metrics (``observers``)."""
