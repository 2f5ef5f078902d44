-- KEYS: twelve per group (ITEMS, LEASE, LEASES, FLAG, FSTATE, TLEASES,
-- LIFE, CANCELS, FIN, IDS, EVS, ELOG of its queue); ARGV[1] now (us),
-- ARGV[2] now+1us as 16 hex digits, ARGV[3] now (ns), then the groups
-- complete reads (count, wake channel, then ref, token and ID index
-- member per lease).
-- Returns the 1-based positions of the leases that were lost, ascending,
-- and negated those of leases whose item was cancelled.
return complete(4, 1)
