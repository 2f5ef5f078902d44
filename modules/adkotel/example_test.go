package adkotel_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/adkit/adk/modules/adkotel"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/contract/runner"
)

// An item's journey: the producer's send span, the worker's receive span
// linking to it, the process span around the handler (a trace of its own,
// linked to the producer) and the complete span.
func Example() {
	ctx := context.Background()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	opts := []adkotel.Option{
		adkotel.WithTracerProvider(tp),
		adkotel.WithMeterProvider(noop.NewMeterProvider()),
		adkotel.WithPropagators(propagation.TraceContext{}),
		adkotel.WithSystem(adkotel.SystemMemory),
	}
	q := adkotel.WrapQueue(memstore.New(nil, memstore.Settings{}), opts...)

	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "run-1", Queue: "runs"}); err != nil {
		log.Fatal(err)
	}
	leases, err := q.Claim(ctx, contract.ClaimRequest{Queue: "runs", Worker: "w1", LeaseFor: time.Minute, Max: 10})
	if err != nil {
		log.Fatal(err)
	}
	handle := adkotel.ProcessMiddleware(opts...)("runs", func(ctx context.Context, l contract.Lease) error {
		return nil // the agent step runs here, under the process span
	})
	for _, l := range leases {
		if err := handle(ctx, l); err != nil {
			log.Fatal(err)
		}
		if err := q.Complete(ctx, l); err != nil {
			log.Fatal(err)
		}
	}

	ended := spans.Ended()
	send := ended[0].SpanContext()
	for _, s := range ended {
		linked := len(s.Links()) == 1 && s.Links()[0].SpanContext.SpanID() == send.SpanID()
		fmt.Printf("%-14s %-8s linked to send: %v\n", s.Name(), s.SpanKind(), linked)
	}
	// Output:
	// send runs      producer linked to send: false
	// receive runs   client   linked to send: true
	// process runs   consumer linked to send: true
	// complete runs  client   linked to send: true
}

// A worker: the runner settles what the handler returns, and the
// middleware puts each handler call in a process span.
func ExampleProcessMiddleware() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	opts := []adkotel.Option{
		adkotel.WithTracerProvider(tp),
		adkotel.WithMeterProvider(noop.NewMeterProvider()),
		adkotel.WithPropagators(propagation.TraceContext{}),
	}
	q := adkotel.WrapQueue(memstore.New(nil, memstore.Settings{}), opts...)
	if err := q.Enqueue(context.Background(), contract.Item{Tenant: "acme", ID: "run-1"}); err != nil {
		log.Fatal(err)
	}

	ctx, stop := context.WithCancel(context.Background())
	r, err := runner.New(q, func(ctx context.Context, l contract.Lease) error {
		defer stop() // one item is enough for the example
		return nil
	}, runner.Config{
		Worker:     "w1",
		Middleware: []runner.Middleware{adkotel.ProcessMiddleware(opts...)},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := r.Run(ctx); err != nil {
		log.Fatal(err)
	}
	for _, s := range spans.Ended() {
		if s.Name() == "process default" {
			fmt.Println(s.Name(), s.SpanKind(), len(s.Links()), "link")
		}
	}
	// Output:
	// process default consumer 1 link
}

// Every state store call is a span named after its operation.
func ExampleWrapState() {
	ctx := context.Background()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	st := adkotel.WrapState(memstore.New(nil, memstore.Settings{}),
		adkotel.WithTracerProvider(tp), adkotel.WithMeterProvider(noop.NewMeterProvider()))

	run, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "run-1", Data: []byte(`{"step":0}`)})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := st.PatchRun(ctx, "acme", "run-1", contract.Patch{Counters: contract.Counters{InputTokens: 120}}); err != nil {
		log.Fatal(err)
	}
	_, err = st.PutRun(ctx, *run) // stale version: a conflict
	fmt.Println(err != nil)
	for _, s := range spans.Ended() {
		fmt.Println(s.Name(), s.SpanKind(), s.Status().Code)
	}
	// Output:
	// true
	// put_run client Unset
	// patch_run client Unset
	// put_run client Error
}

// A worker whose lease was taken back writes under its old fence: the
// store refuses the write, and its span says whose fence won.
func ExampleWrapState_fencedOut() {
	ctx := context.Background()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	st := adkotel.WrapState(memstore.New(nil, memstore.Settings{Runs: contract.RunPolicy{KeepVersions: 10}}),
		adkotel.WithTracerProvider(tp), adkotel.WithMeterProvider(noop.NewMeterProvider()))

	// The item's second execution (lease token 8) has written the run.
	if _, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "run-1", Data: []byte(`{"step":1}`), Fence: 8}); err != nil {
		log.Fatal(err)
	}
	// The first (token 5) comes back from a stall and patches it.
	_, err := st.PatchRun(ctx, "acme", "run-1", contract.Patch{Status: "done", Fence: 5})
	fmt.Println(errors.Is(err, contract.ErrFenced))

	// The versions are there through the wrapper too.
	_, keeps := contract.AsRunKeeper(st)
	fmt.Println(keeps)
	for _, s := range spans.Ended() {
		var fence, stored string
		for _, kv := range s.Attributes() {
			switch kv.Key {
			case adkotel.FenceKey:
				fence = kv.Value.String()
			case adkotel.StoredFenceKey:
				stored = kv.Value.String()
			}
		}
		fmt.Printf("%s %v fence=%s stored=%s\n", s.Name(), s.Status().Code, fence, stored)
	}
	// Output:
	// true
	// true
	// put_run Unset fence=8 stored=
	// patch_run Error fence=5 stored=8
}
