"""The driver of tcp_user: a blocking, socket-like API over a node (sockets), with threads waiting on its lock."""
