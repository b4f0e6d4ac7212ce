"""Orchestration of the Raspberry Pi mesh over SSH (Fabric 3).

``deploy.inventory`` reads and validates the inventory YAML; ``deploy.hosts``
connects and runs steps on every host in parallel (or prints them with
``--dry-run``); ``deploy.install``, ``deploy.mesh`` and ``deploy.routes`` are the
``aspan deploy setup|mesh|routes`` tasks; ``deploy.nodes`` starts, polls, stops
and gathers ``aspan node`` processes; ``deploy.clock`` measures clock offsets.
The ``pi`` backend of the runner (``experiments/backends/pi.py``) is built on them.
"""
