package contract

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultMaxValueBytes caps a run's Data and an item's Payload unless a
// backing is configured otherwise: 256 KiB.
const DefaultMaxValueBytes = 256 << 10

// MaxNameBytes caps tenant names, ids, sessions, queue names and workers.
const MaxNameBytes = 512

// ValidateName checks a tenant, id, session, queue or worker name: not
// empty, at most MaxNameBytes, valid UTF-8, no NUL byte. Any other
// character is allowed (a tenant may be called "a:b" or "{x}"); backings
// encode names so that distinct names never collide.
func ValidateName(field, s string) error {
	if plainName(s) {
		return nil
	}
	return nameError(field, s)
}

// plainName reports, in one pass and without a call, that s is a valid
// name of ASCII characters: the common case, which every call of the
// front door checks several times over.
func plainName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameBytes {
		return false
	}
	// Eight bytes at a time: none may have its top bit set (not ASCII)
	// or be zero (a NUL).
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	for len(s) >= 8 {
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		if w&tops != 0 || (w-ones)&tops != 0 {
			return false
		}
		s = s[8:]
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == 0 || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// nameError is ValidateName's full check, for names plainName did not
// pass: nil for a valid name outside ASCII, else what is wrong.
func nameError(field, s string) error {
	switch {
	case s == "":
		return &ValidationError{Field: field, Problem: "is empty; give it a value"}
	case len(s) > MaxNameBytes:
		return &ValidationError{Field: field, Problem: fmt.Sprintf("is %d bytes; keep it to %d", len(s), MaxNameBytes)}
	case !utf8.ValidString(s):
		return &ValidationError{Field: field, Problem: "is not valid UTF-8; encode it as UTF-8"}
	case strings.IndexByte(s, 0) >= 0:
		return &ValidationError{Field: field, Problem: "contains a NUL byte; remove it"}
	}
	return nil
}

// ValidateRun checks a run before PutRun sends anything: names, Data is a
// JSON document (or empty), and at most maxBytes long.
func ValidateRun(run Run, maxBytes int) error {
	if err := ValidateName("Run.Tenant", run.Tenant); err != nil {
		return err
	}
	if err := ValidateName("Run.ID", run.ID); err != nil {
		return err
	}
	if run.Session != "" {
		if err := ValidateName("Run.Session", run.Session); err != nil {
			return err
		}
	}
	if !utf8.ValidString(run.Status) || strings.IndexByte(run.Status, 0) >= 0 || len(run.Status) > MaxNameBytes {
		return &ValidationError{Field: "Run.Status", Problem: fmt.Sprintf("must be valid UTF-8 without NUL bytes, at most %d bytes", MaxNameBytes)}
	}
	if run.Version < 0 {
		return &ValidationError{Field: "Run.Version", Problem: "is negative; pass 0 to create or the stored version to update"}
	}
	if len(run.Data) > maxBytes {
		return TooLarge("run data", len(run.Data), maxBytes)
	}
	// json.Valid lets invalid UTF-8 inside strings through; PostgreSQL's
	// jsonb and most readers refuse it, so every backing refuses it here.
	if len(run.Data) > 0 && (!json.Valid(run.Data) || !utf8.Valid(run.Data)) {
		return &ValidationError{Field: "Run.Data", Problem: "is not a valid JSON document; marshal it with encoding/json"}
	}
	return nil
}

// ValidatePatch checks a patch's status.
func ValidatePatch(p Patch) error {
	if !utf8.ValidString(p.Status) || strings.IndexByte(p.Status, 0) >= 0 || len(p.Status) > MaxNameBytes {
		return &ValidationError{Field: "Patch.Status", Problem: fmt.Sprintf("must be valid UTF-8 without NUL bytes, at most %d bytes", MaxNameBytes)}
	}
	return nil
}

// ValidateItem checks an item before Enqueue sends anything.
func ValidateItem(it Item, maxBytes int) error { return validateItem(&it, maxBytes) }

// validateItem is ValidateItem without the copy of the item.
func validateItem(it *Item, maxBytes int) error {
	if err := ValidateName("Item.Tenant", it.Tenant); err != nil {
		return err
	}
	if err := ValidateName("Item.ID", it.ID); err != nil {
		return err
	}
	if err := ValidateName("Item.Queue", QueueName(it.Queue)); err != nil {
		return err
	}
	if len(it.Payload) > maxBytes {
		return TooLarge("item payload", len(it.Payload), maxBytes)
	}
	if it.Priority != 0 {
		if err := ValidatePriority(it.Priority); err != nil {
			return err
		}
	}
	if it.UniqueFor != 0 {
		if err := ValidateUniqueFor(it.UniqueFor); err != nil {
			return err
		}
	}
	for k, v := range it.Metadata {
		if err := ValidateName("Item.Metadata key", k); err != nil {
			return err
		}
		if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
			return &ValidationError{Field: "Item.Metadata[" + k + "]", Problem: "must be valid UTF-8 without NUL bytes"}
		}
	}
	return nil
}

// ValidateItems checks a batch for Enqueue: at least one item, each valid.
func ValidateItems(items []Item, maxBytes int) error {
	if len(items) == 0 {
		return &ValidationError{Field: "items", Problem: "no items given; pass at least one"}
	}
	for i := range items {
		if err := validateItem(&items[i], maxBytes); err != nil {
			return err
		}
	}
	return nil
}

// ValidateClaim checks a claim request.
func ValidateClaim(req ClaimRequest) error {
	if err := ValidateName("ClaimRequest.Queue", QueueName(req.Queue)); err != nil {
		return err
	}
	if req.Worker != "" {
		if err := ValidateName("ClaimRequest.Worker", req.Worker); err != nil {
			return err
		}
	}
	if req.LeaseFor <= 0 {
		return &ValidationError{Field: "ClaimRequest.LeaseFor", Problem: fmt.Sprintf("is %v; give a positive lease such as 30s", req.LeaseFor)}
	}
	if req.Max < 1 || req.Max > MaxClaimBatch {
		return &ValidationError{Field: "ClaimRequest.Max", Problem: fmt.Sprintf("is %d; ask for 1 to %d items", req.Max, MaxClaimBatch)}
	}
	return nil
}

// ValidateExtend checks a heartbeat's extension.
func ValidateExtend(d time.Duration) error {
	if d <= 0 {
		return &ValidationError{Field: "extend", Problem: fmt.Sprintf("is %v; give a positive lease extension", d)}
	}
	return nil
}

// ValidateLease checks the identity fields of a lease given to a settle.
func ValidateLease(l Lease) error { return validateLease(&l) }

// validateLease is ValidateLease without the copy of the lease.
func validateLease(l *Lease) error {
	if err := ValidateName("Lease.Item.Tenant", l.Item.Tenant); err != nil {
		return err
	}
	if err := ValidateName("Lease.Item.ID", l.Item.ID); err != nil {
		return err
	}
	return ValidateName("Lease.Item.Queue", QueueName(l.Item.Queue))
}

// ValidateCompleteAndClaim checks the input of
// CompleteClaimer.CompleteAndClaim: every lease of done, then req, whose
// Max may be 0 (complete only; its queue name must still be valid).
func ValidateCompleteAndClaim(done []Lease, req ClaimRequest) error {
	for i := range done {
		if err := validateLease(&done[i]); err != nil {
			return err
		}
	}
	if req.Max == 0 {
		return ValidateName("ClaimRequest.Queue", QueueName(req.Queue))
	}
	return ValidateClaim(req)
}

// ValidatePage checks a page request and returns its effective limit.
func ValidatePage(p PageRequest) (int, error) {
	switch {
	case p.Limit < 0 || p.Limit > MaxPageSize:
		return 0, &ValidationError{Field: "PageRequest.Limit", Problem: fmt.Sprintf("is %d; ask for 0 (default %d) to %d", p.Limit, DefaultPageSize, MaxPageSize)}
	case p.Limit == 0:
		return DefaultPageSize, nil
	}
	return p.Limit, nil
}

// ValidateFilter checks a dead-letter filter.
func ValidateFilter(f DeadLetterFilter) error {
	if err := ValidateName("DeadLetterFilter.Queue", QueueName(f.Queue)); err != nil {
		return err
	}
	for _, s := range []struct{ field, v string }{{"DeadLetterFilter.Tenant", f.Tenant}, {"DeadLetterFilter.ID", f.ID}} {
		if s.v != "" {
			if err := ValidateName(s.field, s.v); err != nil {
				return err
			}
		}
	}
	if !utf8.ValidString(f.ErrorContains) {
		return &ValidationError{Field: "DeadLetterFilter.ErrorContains", Problem: "is not valid UTF-8"}
	}
	return nil
}

// Matches reports whether the dead letter it passes the filter (the queue
// is not compared; callers select the queue first).
func (f DeadLetterFilter) Matches(it Item) bool {
	return (f.Tenant == "" || it.Tenant == f.Tenant) &&
		(f.ID == "" || it.ID == f.ID) &&
		ContainsFoldASCII(it.LastError, f.ErrorContains)
}

// ContainsFoldASCII reports whether sub is within s with ASCII letters
// matched in either case (FoldASCII's rule), without allocating: filters
// run it over every letter they scan.
func ContainsFoldASCII(s, sub string) bool {
	n := len(sub)
	if n == 0 {
		return true
	}
	first := lowerASCII(sub[0])
	for i := 0; i+n <= len(s); i++ {
		if lowerASCII(s[i]) != first {
			continue
		}
		j := 1
		for j < n && lowerASCII(s[i+j]) == lowerASCII(sub[j]) {
			j++
		}
		if j == n {
			return true
		}
	}
	return false
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// FoldASCII lowers the ASCII letters of s and leaves every other byte as
// it is: the case folding of DeadLetterFilter.ErrorContains. It is the
// folding every backing can do alike (Lua's string.lower and PostgreSQL's
// lower() under the "C" collation fold exactly these), where full Unicode
// folding would differ from one server's locale to the next.
func FoldASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				b[j] = lowerASCII(b[j])
			}
			return string(b)
		}
	}
	return s
}

// ValidateDeadQuery checks a dead-letter page request and returns its
// effective limit.
func ValidateDeadQuery(q DeadLetterQuery) (int, error) {
	if err := ValidateFilter(q.DeadLetterFilter); err != nil {
		return 0, err
	}
	if q.Skip < 0 {
		return 0, &ValidationError{Field: "DeadLetterQuery.Skip", Problem: fmt.Sprintf("is %d; give 0 or more letters to pass over", q.Skip)}
	}
	return ValidatePage(q.Page)
}

// ErrorGroup is the part of a LastError that DeadLetterSummary groups
// letters by: its first ErrorGroupRunes characters.
func ErrorGroup(lastError string) string {
	n := 0
	for i := range lastError {
		if n == ErrorGroupRunes {
			return lastError[:i]
		}
		n++
	}
	return lastError
}

// ErrorText is the text recorded as an item's LastError for cause, cut to
// 4 KiB on a rune boundary.
func ErrorText(cause error) string {
	if cause == nil {
		return "failed without an error"
	}
	s := strings.ToValidUTF8(strings.ReplaceAll(cause.Error(), "\x00", ""), "\uFFFD")
	const max = 4 << 10
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

// ValidateRunKey checks the tenant and id naming a run.
func ValidateRunKey(tenant, id string) error {
	if err := ValidateName("tenant", tenant); err != nil {
		return err
	}
	return ValidateName("id", id)
}

// ValidateItemKey checks the names of an item's key, its Queue already
// filled in.
func ValidateItemKey(key ItemKey) error {
	for _, f := range []struct{ field, v string }{{"ItemKey.Tenant", key.Tenant}, {"ItemKey.Queue", key.Queue}, {"ItemKey.ID", key.ID}} {
		if err := ValidateName(f.field, f.v); err != nil {
			return err
		}
	}
	return nil
}

// ValidateRecentTurns checks how many recent turns Inspector.Rotation is
// asked for.
func ValidateRecentTurns(n int) error {
	if n < 0 || n > MaxRecentTurns {
		return &ValidationError{Field: "n", Problem: fmt.Sprintf("is %d; ask for 0 to %d recent turns", n, MaxRecentTurns)}
	}
	return nil
}
