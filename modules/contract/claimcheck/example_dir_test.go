package claimcheck_test

import (
	"context"
	"fmt"
	"os"

	"github.com/adkit/adk/modules/contract/claimcheck"
)

func ExampleNewDir() {
	root, _ := os.MkdirTemp("", "blobs")
	defer os.RemoveAll(root)

	ctx := context.Background()
	d, err := claimcheck.NewDir(root)
	if err != nil {
		panic(err)
	}
	ref, _ := d.Put(ctx, "acme", []byte("a large document"))
	data, _ := d.Get(ctx, "acme", ref)
	fmt.Println(string(data))

	_, err = d.Get(ctx, "another tenant", ref)
	fmt.Println(err != nil)
	// Output:
	// a large document
	// true
}
