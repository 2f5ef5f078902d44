package adkotel

import (
	"context"
	"fmt"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/runner"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/messagingconv"
	"go.opentelemetry.io/otel/trace"
)

// ProcessMiddleware returns a runner middleware that runs each handler
// call inside a "process <queue>" CONSUMER span, so a worker's handler
// needs no tracing code of its own:
//
//	runner.New(q, handle, runner.Config{Middleware: []runner.Middleware{adkotel.ProcessMiddleware()}})
//
// The span links to the context the producer wrote into the item's
// Metadata; with [WithParentFromMessage] the first attempt is a child of
// it instead. Its parent is otherwise whatever span the handler's context
// carries (usually none, making it the root of a trace of its own). It
// carries messaging.system (from [WithSystem], else [SystemADK]),
// messaging.destination.name, messaging.message.id, the body size,
// adk.tenant and adk.attempt. A returned error is recorded with an error
// status and error.type; a panic is recorded and re-panicked for the
// runner to turn into a failure. Durations go to messaging.process.duration.
func ProcessMiddleware(opts ...Option) runner.Middleware {
	p := newProcessor(opts)
	return func(queue string, next runner.Handler) runner.Handler {
		return p.wrap(queue, next)
	}
}

// processor opens the process span around a handler.
type processor struct {
	tracer        trace.Tracer
	propagator    propagation.TextMapPropagator
	parentFromMsg bool
	system        string
	duration      messagingconv.ProcessDuration
}

func newProcessor(opts []Option) *processor {
	cfg := newConfig(opts)
	system := cfg.system
	if system == "" {
		system = SystemADK
	}
	d, err := messagingconv.NewProcessDuration(cfg.meter())
	if err != nil {
		otel.Handle(err)
	}
	return &processor{
		tracer:        cfg.tracer(),
		propagator:    cfg.propagator,
		parentFromMsg: cfg.parentFromMsg,
		system:        system,
		duration:      d,
	}
}

// wrap returns next inside a "process <queue>" CONSUMER span.
func (p *processor) wrap(queue string, next runner.Handler) runner.Handler {
	return func(ctx context.Context, lease contract.Lease) (err error) {
		it := lease.Item
		qn := contract.QueueName(it.Queue)
		if it.Queue == "" && queue != "" {
			qn = queue
		}
		opts := []trace.SpanStartOption{
			trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithAttributes(
				systemAttr(p.system),
				semconv.MessagingOperationName(opProcess),
				semconv.MessagingOperationTypeProcess,
				semconv.MessagingDestinationName(qn),
				semconv.MessagingMessageID(it.ID),
				semconv.MessagingMessageBodySize(len(it.Payload)),
				TenantKey.String(it.Tenant),
				AttemptKey.Int(it.Attempts+1),
			),
		}
		parent := ctx
		if sc := messageContext(p.propagator, it); sc.IsValid() {
			if p.parentFromMsg && it.Attempts == 0 {
				parent = trace.ContextWithRemoteSpanContext(ctx, sc)
			} else {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
			}
		}
		ctx, span := p.tracer.Start(parent, spanName(opProcess, qn), opts...)
		begin := time.Now()
		finish := func(errType attribute.KeyValue, failed bool) {
			span.End()
			attrs := []attribute.KeyValue{semconv.MessagingDestinationName(qn)}
			if failed {
				attrs = append(attrs, errType)
			}
			p.duration.Record(ctx, time.Since(begin).Seconds(), opProcess, messagingSystem(p.system), attrs...)
		}
		defer func() {
			if r := recover(); r != nil {
				span.SetStatus(codes.Error, fmt.Sprint("panic: ", r))
				span.SetAttributes(semconv.ErrorTypeKey.String("panic"))
				finish(semconv.ErrorTypeKey.String("panic"), true)
				panic(r)
			}
			if err != nil {
				recordError(span, err)
				finish(semconv.ErrorType(err), true)
				return
			}
			finish(attribute.KeyValue{}, false)
		}()
		return next(ctx, lease)
	}
}
