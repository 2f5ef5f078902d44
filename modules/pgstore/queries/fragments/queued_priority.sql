-- Whether the queue $1 holds a queued item with a priority: one probe of
-- {work}_ready_pri. The claims rendered with one range per tenant's pick
-- (fragments/pick_plain.sql) cannot serve such a queue. Queries name it
-- {queued_priority}; it is a boolean expression.
EXISTS (SELECT 1 FROM {work} q WHERE q.queue = $1 AND q.state = 'queued' AND q.priority <> 0)
