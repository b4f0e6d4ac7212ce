"""The kernel data plane's core: the forwarder over IPv4 bytes (forwarder), IPv4 and TCP parsing (ipv4), the A-SPAN IPv4 option (ip_option), forged ACKs (forge) and TSval rewriting (tsval)."""
