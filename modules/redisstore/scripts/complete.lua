-- KEYS: three per group (ITEMS, LEASE, LEASES of its queue); ARGV: the
-- groups complete reads (count, then ref and token per lease).
-- Returns the 1-based positions of the leases that were lost, ascending.
return complete(1, 1)
