-- The claims' index in memory hashes with HalfSipHash instead of SHA-1 (docs/ingress.md#the-claim-in-arrival-order):
-- the same protection (a hash keyed by the database's own random key), for a fraction of the CPU of
-- a digest per delivery. The hashes stored until now are forgotten; the runtime computes the new
-- ones after it starts, in steps between requests, as it does for claims that never had one.
UPDATE delivery_claims SET hash = NULL;
