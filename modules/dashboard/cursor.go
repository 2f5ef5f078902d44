package dashboard

import (
	"encoding/base64"
	"hash/crc32"
	"strconv"
	"strings"

	"github.com/adkit/adk/modules/contract"
)

// The dashboard hands out its own page cursors, wrapping the backing's:
// a backing's cursor is a bare position (on Redis, "abc" is a valid
// base-36 number), so a mistyped or truncated link would otherwise show an
// empty page on one backing and an error on another. A wrapped cursor
// carries a checksum, and anything that fails it is the same 400 on every
// backing.

// pageCursor is a place in a listing: the backing's cursor and, for
// listings that can be read both ways, the direction it was handed out
// for.
type pageCursor struct {
	Backing string
	Older   bool // the next rows are older ones (dead letters, newest first)
}

func (p pageCursor) String() string {
	if p.Backing == "" {
		return ""
	}
	dir := "n"
	if p.Older {
		dir = "o"
	}
	body := dir + base64.RawURLEncoding.EncodeToString([]byte(p.Backing))
	return body + "." + strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 36)
}

// parsePageCursor reads a cursor from a link; "" is the first page.
func parsePageCursor(s string) (pageCursor, error) {
	if s == "" {
		return pageCursor{}, nil
	}
	bad := &contract.ValidationError{Field: "cursor", Problem: "is not a cursor this dashboard handed out; follow the page links, or drop cursor= to start from the first page"}
	body, sum, ok := strings.Cut(s, ".")
	if !ok || len(body) < 2 || strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 36) != sum {
		return pageCursor{}, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(body[1:])
	if err != nil || len(raw) == 0 || (body[0] != 'n' && body[0] != 'o') {
		return pageCursor{}, bad
	}
	return pageCursor{Backing: string(raw), Older: body[0] == 'o'}, nil
}
