-- ARGV[1] namespace prefix, then per lease: queue prefix, ref, token.
-- Returns the 1-based positions of the leases that were lost, ascending.
return complete(2)
