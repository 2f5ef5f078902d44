-- The version below which a run's versions are past the policy's count:
-- the version of the run's ($1 tenant, $2 id) newest version but $3 (the
-- versions the policy keeps; 0 keeps none), 0 when it has no more than
-- $3. A version is within the count when it is above this. Queries name
-- it {kept_floor}.
coalesce((SELECT w.version FROM {runs}_versions w WHERE w.tenant = $1 AND w.id = $2 ORDER BY w.version DESC OFFSET $3 LIMIT 1), 0)
