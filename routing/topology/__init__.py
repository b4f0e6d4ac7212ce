"""The mesh as a graph (graph), routes computed over it (routes) and the link-state router that follows the probes (linkstate)."""
