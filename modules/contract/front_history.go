package contract

import "context"

func (f QueueFront) history() (HistoryKeeper, error) {
	if f.hk == nil {
		return nil, unsupported("HistoryKeeper")
	}
	return f.hk, nil
}

// SetRetention implements [HistoryKeeper].
func (f QueueFront) SetRetention(ctx context.Context, queue string, r Retention) error {
	hk, err := f.history()
	if err != nil {
		return err
	}
	name, err := queueTenant(queue, "")
	if err != nil {
		return err
	}
	if err := ValidateRetention(r); err != nil {
		return err
	}
	return hk.SetRetention(ctx, name, r)
}

// Retention implements [HistoryKeeper].
func (f QueueFront) Retention(ctx context.Context, queue string) (Retention, error) {
	hk, err := f.history()
	if err != nil {
		return Retention{}, err
	}
	name, err := queueTenant(queue, "")
	if err != nil {
		return Retention{}, err
	}
	return hk.Retention(ctx, name)
}

// EnqueueReport implements [HistoryKeeper].
func (f QueueFront) EnqueueReport(ctx context.Context, items ...Item) ([]EnqueueResult, error) {
	hk, err := f.history()
	if err != nil {
		return nil, err
	}
	if err := ValidateItems(items, f.maxBytes); err != nil {
		return nil, err
	}
	return hk.EnqueueReport(ctx, normalizedItems(items)...)
}

// History implements [HistoryKeeper].
func (f QueueFront) History(ctx context.Context, key ItemKey) (History, error) {
	hk, err := f.history()
	if err != nil {
		return History{}, err
	}
	key.Queue = QueueName(key.Queue)
	if err := ValidateItemKey(key); err != nil {
		return History{}, err
	}
	return hk.History(ctx, key)
}

// Finished implements [HistoryKeeper].
func (f QueueFront) Finished(ctx context.Context, q FinishedQuery) (FinishedPage, error) {
	hk, err := f.history()
	if err != nil {
		return FinishedPage{}, err
	}
	limit, err := ValidateFinishedQuery(q)
	if err != nil {
		return FinishedPage{}, err
	}
	q.Queue, q.Page.Limit = QueueName(q.Queue), limit
	return hk.Finished(ctx, q)
}

// Find implements [HistoryKeeper].
func (f QueueFront) Find(ctx context.Context, queue, id string) ([]Item, error) {
	hk, err := f.history()
	if err != nil {
		return nil, err
	}
	name, err := queueTenant(queue, "")
	if err != nil {
		return nil, err
	}
	if err := ValidateName("id", id); err != nil {
		return nil, err
	}
	return hk.Find(ctx, name, id)
}

// QueueEvents implements [HistoryKeeper].
func (f QueueFront) QueueEvents(ctx context.Context, queue, cursor string, limit int) (EventPage, error) {
	hk, err := f.history()
	if err != nil {
		return EventPage{}, err
	}
	name, err := queueTenant(queue, "")
	if err != nil {
		return EventPage{}, err
	}
	if err := ValidateEventLimit(limit); err != nil {
		return EventPage{}, err
	}
	return hk.QueueEvents(ctx, name, cursor, limit)
}

// Prune implements [HistoryKeeper].
func (f QueueFront) Prune(ctx context.Context, queue string) (int, error) {
	hk, err := f.history()
	if err != nil {
		return 0, err
	}
	name, err := queueTenant(queue, "")
	if err != nil {
		return 0, err
	}
	return hk.Prune(ctx, name)
}

func (p Passthrough) history() (HistoryKeeper, error) {
	if p.hk == nil {
		return nil, unsupported("HistoryKeeper")
	}
	return p.hk, nil
}

// SetRetention forwards [HistoryKeeper.SetRetention].
func (p Passthrough) SetRetention(ctx context.Context, queue string, r Retention) error {
	hk, err := p.history()
	if err != nil {
		return err
	}
	return hk.SetRetention(ctx, queue, r)
}

// Retention forwards [HistoryKeeper.Retention].
func (p Passthrough) Retention(ctx context.Context, queue string) (Retention, error) {
	hk, err := p.history()
	if err != nil {
		return Retention{}, err
	}
	return hk.Retention(ctx, queue)
}

// EnqueueReport forwards [HistoryKeeper.EnqueueReport].
func (p Passthrough) EnqueueReport(ctx context.Context, items ...Item) ([]EnqueueResult, error) {
	hk, err := p.history()
	if err != nil {
		return nil, err
	}
	return hk.EnqueueReport(ctx, items...)
}

// History forwards [HistoryKeeper.History].
func (p Passthrough) History(ctx context.Context, key ItemKey) (History, error) {
	hk, err := p.history()
	if err != nil {
		return History{}, err
	}
	return hk.History(ctx, key)
}

// Finished forwards [HistoryKeeper.Finished].
func (p Passthrough) Finished(ctx context.Context, q FinishedQuery) (FinishedPage, error) {
	hk, err := p.history()
	if err != nil {
		return FinishedPage{}, err
	}
	return hk.Finished(ctx, q)
}

// Find forwards [HistoryKeeper.Find].
func (p Passthrough) Find(ctx context.Context, queue, id string) ([]Item, error) {
	hk, err := p.history()
	if err != nil {
		return nil, err
	}
	return hk.Find(ctx, queue, id)
}

// QueueEvents forwards [HistoryKeeper.QueueEvents].
func (p Passthrough) QueueEvents(ctx context.Context, queue, cursor string, limit int) (EventPage, error) {
	hk, err := p.history()
	if err != nil {
		return EventPage{}, err
	}
	return hk.QueueEvents(ctx, queue, cursor, limit)
}

// Prune forwards [HistoryKeeper.Prune].
func (p Passthrough) Prune(ctx context.Context, queue string) (int, error) {
	hk, err := p.history()
	if err != nil {
		return 0, err
	}
	return hk.Prune(ctx, queue)
}
