package redisstore

import (
	"errors"
	"strings"
	"testing"
)

// TestSplitTopLevel: a lib's top-level locals with values become
// declarations in place and assignments for the call's start, a
// statement continued on indented lines included; functions, comments
// and locals without a value stay as they are.
func TestSplitTopLevel(t *testing.T) {
	src := "-- keys\nlocal A, B,\n  C = unpack(KEYS, 1, 3)\nlocal D\nlocal function f()\n  local x = 1\n  return A .. x\nend\nlocal E = {'s', 'a'}\n"
	decl, init := splitTopLevel(src)
	wantDecl := "-- keys\nlocal A, B, C\nlocal D\nlocal function f()\n  local x = 1\n  return A .. x\nend\nlocal E\n\n"
	if decl != wantDecl {
		t.Errorf("declarations:\n%s\nwant:\n%s", decl, wantDecl)
	}
	wantInit := "A, B,\n  C = unpack(KEYS, 1, 3)\nE = {'s', 'a'}\n"
	if init != wantInit {
		t.Errorf("assignments:\n%s\nwant:\n%s", init, wantInit)
	}
}

// TestFunctionLibraries: every script has a library named after it and
// its hash, whose call sets KEYS and ARGV and runs the libs' assignments
// before the body; the read-only ones carry no-writes.
func TestFunctionLibraries(t *testing.T) {
	if len(allScripts) < 30 {
		t.Fatalf("%d scripts", len(allScripts))
	}
	for _, sc := range allScripts {
		if !strings.HasPrefix(sc.lib, "#!lua name="+sc.fn+"\n") || !strings.HasPrefix(sc.fn, "adk_") || !strings.HasSuffix(sc.fn, sc.Hash()[:16]) {
			t.Errorf("%s: library header %q", sc.fn, sc.lib[:min(len(sc.lib), 60)])
		}
		call := sc.lib[strings.Index(sc.lib, "redis.register_function{"):]
		if !strings.Contains(call, "callback = function(keys, args)\nKEYS, ARGV = keys, args\n") {
			t.Errorf("%s: the call does not set KEYS and ARGV first", sc.fn)
		}
		if got := strings.Contains(call, "flags = {'no-writes'}"); got != sc.readOnly {
			t.Errorf("%s: no-writes %v, read-only %v", sc.fn, got, sc.readOnly)
		}
	}
	if !scriptStateGet.readOnly || scriptClaim.readOnly {
		t.Error("state_get must be read-only and claim not")
	}
}

// TestFunctionsRefused: the replies that turn a store to EVALSHA for
// good, and the transient ones that do not.
func TestFunctionsRefused(t *testing.T) {
	for msg, want := range map[string]bool{
		"ERR unknown command 'FUNCTION', with args beginning with: 'LOAD' 'REPLACE' ":   true,
		"NOPERM User nofn has no permissions to run the 'function|load' command":        true,
		"ERR Error registering functions: user_function:3: attempt to call a nil value": true,
		"ERR Error compiling function: user_function:1: unexpected symbol":              true,
		"LOADING Redis is loading the dataset in memory":                                false,
		"READONLY You can't write against a read only replica.":                         false,
		"dial tcp 127.0.0.1:6379: connect: connection refused":                          false,
	} {
		if got := functionsRefused(errors.New(msg)); got != want {
			t.Errorf("functionsRefused(%q) = %v, want %v", msg, got, want)
		}
	}
}
