"""The UDP overlay's cores: the wire format (wire), the forwarding engine (engine), the node (node), the MAC (auth), neighbour checks (neighbours) and the emulated egress links (udp_link)."""
