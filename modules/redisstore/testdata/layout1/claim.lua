-- Leases up to ARGV[8] due items of one queue (see claim in claim_lib.lua).
return claim()
