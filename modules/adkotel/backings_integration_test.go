//go:build integration

package adkotel_test

func e2eBackings() []backing {
	return []backing{memoryBacking()}
}
