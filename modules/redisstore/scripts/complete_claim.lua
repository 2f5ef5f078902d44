-- Completes and claims in one call (completeClaim in complete_claim_lib.lua).
return completeClaim()
