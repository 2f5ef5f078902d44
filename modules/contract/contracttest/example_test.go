package contracttest_test

import (
	"fmt"
	"time"

	"github.com/adkit/adk/modules/contract/contracttest"
)

// A FakeClock moves only when told to, so a test can expire a lease or
// reach a retry's due time without sleeping.
func ExampleFakeClock() {
	clock := contracttest.NewFakeClock(time.Time{}) // starts at FakeEpoch
	start := clock.Now()
	clock.Advance(30*time.Second + time.Millisecond)
	fmt.Println(start.Format(time.RFC3339))
	fmt.Println(clock.Now().Sub(start))
	// Output:
	// 2030-01-01T00:00:00Z
	// 30.001s
}
