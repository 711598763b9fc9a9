"""Where buckets, bits and signatures live: memory, the state database, Redis."""
