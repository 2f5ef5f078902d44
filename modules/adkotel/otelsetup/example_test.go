package otelsetup_test

import (
	"context"
	"log"

	"github.com/adkit/adk/modules/adkotel"
	"github.com/adkit/adk/modules/adkotel/otelsetup"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
)

// What a main puts first: providers from the OTEL_* variables, installed
// as the globals that adkotel's WrapQueue, WrapState and
// ProcessMiddleware default to.
func ExampleSetup() {
	ctx := context.Background()
	shutdown, err := otelsetup.Setup(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := shutdown(context.Background()); err != nil {
			log.Print(err)
		}
	}()
	var backing contract.WorkQueue = memstore.New(nil, memstore.Settings{}) // or redisstore / pgstore
	q := adkotel.WrapQueue(backing)
	_ = q
}
