"""Overlay routing: wire format, static routes, loss models, the forwarding engine and drivers."""
