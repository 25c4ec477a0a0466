"""Sub-commands of the ``unmask`` CLI, one module per command group (each has ``add_parser``)."""
