package adkotel

import "github.com/adkit/adk/modules/contract"

// The wrapped queue must answer the same type assertions as the queue it
// wraps: a runner that finds a Waker sleeps until woken instead of
// polling, and the dashboard needs the Inspector. One type per combination
// keeps an assertion from succeeding on a capability the inner queue
// lacks.

type queueI struct {
	*queue
	contract.Inspector
}

type queueW struct {
	*queue
	contract.Waker
}

type queueS struct {
	*queue
	contract.StatsSource
}

type queueIW struct {
	*queue
	contract.Inspector
	contract.Waker
}

type queueIS struct {
	*queue
	contract.Inspector
	contract.StatsSource
}

type queueWS struct {
	*queue
	contract.Waker
	contract.StatsSource
}

type queueIWS struct {
	*queue
	contract.Inspector
	contract.Waker
	contract.StatsSource
}

func forward(w *queue, ins contract.Inspector, wk contract.Waker, st contract.StatsSource) contract.WorkQueue {
	switch i, k, s := ins != nil, wk != nil, st != nil; {
	case i && k && s:
		return queueIWS{w, ins, wk, st}
	case i && k:
		return queueIW{w, ins, wk}
	case i && s:
		return queueIS{w, ins, st}
	case k && s:
		return queueWS{w, wk, st}
	case i:
		return queueI{w, ins}
	case k:
		return queueW{w, wk}
	case s:
		return queueS{w, st}
	default:
		return w
	}
}
