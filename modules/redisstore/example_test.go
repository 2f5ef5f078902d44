package redisstore_test

import (
	"fmt"

	"github.com/adkit/adk/modules/redisstore"
)

// Settings print without the DSN's password, however they are formatted.
func ExampleSettings() {
	s := redisstore.Settings{DSN: "redis://:hunter2@redis.internal:6379/0", Namespace: "billing"}
	fmt.Printf("%v\n", s.DSN)
	fmt.Printf("%+v\n", s.RetryBudget)
	// Output:
	// [redacted]
	// {Attempts:0 BaseDelay:0s MaxDelay:0s MaxElapsed:0s}
}
