package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/adkit/adk/modules/pgstore"
)

// A payload PostgreSQL would refuse is refused before the round trip.
func ExampleNotify() {
	var db pgstore.Executor // a pool in real use; nothing is sent here
	err := pgstore.Notify(context.Background(), db, "adk_work", strings.Repeat("x", 9000))
	var tooLarge *pgstore.PayloadTooLargeError
	fmt.Println(errors.As(err, &tooLarge), tooLarge.Size, tooLarge.Limit)
	// Output:
	// true 9000 7999
}
