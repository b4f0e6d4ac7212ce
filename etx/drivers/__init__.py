"""The driver of etx: the prober thread (prober)."""
