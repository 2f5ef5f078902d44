package sqlitestore

import (
	"os"
	"path/filepath"
	"testing"
)

// A path with a space or a percent sign opens that file, not an escaped
// name beside it.
func TestDSNKeepsAwkwardPaths(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a b%20c")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "adk #1.db")
	db, err := OpenDB(path, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := Prepare(t.Context(), db, Settings{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the file is not where the path says: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "adk #1.db" && e.Name() != "adk #1.db-wal" && e.Name() != "adk #1.db-shm" {
			t.Errorf("unexpected file %q beside the database", e.Name())
		}
	}
}
