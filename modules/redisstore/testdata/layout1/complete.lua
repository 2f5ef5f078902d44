-- ARGV[1] namespace prefix, then the groups complete reads (queue prefix,
-- count, then ref and token per lease).
-- Returns the 1-based positions of the leases that were lost, ascending.
return complete(2)
