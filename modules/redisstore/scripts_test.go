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
	// D is assigned apart from its declaration: the assignment stays at
	// the top level, run once at the load (a value kept between calls).
	src := "-- keys\nlocal A, B,\n  C = unpack(KEYS, 1, 3)\nlocal D\nD = {}\nlocal function f()\n  local x = 1\n  return A .. x\nend\nlocal E = {'s', 'a'}\n"
	decl, init := splitTopLevel(src)
	wantDecl := "-- keys\nlocal A, B, C\nlocal D\nD = {}\nlocal function f()\n  local x = 1\n  return A .. x\nend\nlocal E\n\n"
	if decl != wantDecl {
		t.Errorf("declarations:\n%s\nwant:\n%s", decl, wantDecl)
	}
	wantInit := "A, B,\n  C = unpack(KEYS, 1, 3)\nE = {'s', 'a'}\n"
	if init != wantInit {
		t.Errorf("assignments:\n%s\nwant:\n%s", init, wantInit)
	}
}

// TestFunctionLibraries: every script has a library named after it and a
// hash of its source and flags, whose call sets KEYS and ARGV and runs
// the libs' assignments before the body; the read-only ones carry
// no-writes, the growing ones no flag, every other allow-oom and a
// flagged script for a full server (TestOutOfMemory runs those).
func TestFunctionLibraries(t *testing.T) {
	if len(allScripts) < 30 {
		t.Fatalf("%d scripts", len(allScripts))
	}
	names := map[string]bool{}
	for _, sc := range allScripts {
		if !strings.HasPrefix(sc.lib, "#!lua name="+sc.fn+"\n") || !strings.HasPrefix(sc.fn, "adk_") || len(sc.fn) < len("adk_x_")+16 {
			t.Errorf("%s: library header %q", sc.fn, sc.lib[:min(len(sc.lib), 60)])
		}
		if names[sc.fn] {
			t.Errorf("%s: two scripts share the name", sc.fn)
		}
		names[sc.fn] = true
		call := sc.lib[strings.Index(sc.lib, "redis.register_function{"):]
		if !strings.Contains(call, "callback = function(keys, args)\nKEYS, ARGV = keys, args\n") {
			t.Errorf("%s: the call does not set KEYS and ARGV first", sc.fn)
		}
		name := strings.TrimPrefix(sc.fn[:len(sc.fn)-17], "adk_")
		flag := "'allow-oom'"
		switch {
		case sc.readOnly:
			flag = "'no-writes'"
		case growingScripts[name]:
			flag = ""
		}
		if got := strings.Contains(call, "flags = {"+flag+"}"); got != (flag != "") || (flag == "" && strings.Contains(call, "flags =")) {
			t.Errorf("%s: flags in %q; want {%s}", sc.fn, call[len(call)-60:], flag)
		}
		switch {
		case flag == "" && sc.flagged != nil:
			t.Errorf("%s: a flagged script for a script without flags", sc.fn)
		case flag != "" && (sc.flagged == nil || sc.flagged.Hash() == sc.Hash()):
			t.Errorf("%s: no flagged script", sc.fn)
		}
	}
	if !scriptStateGet.readOnly || scriptClaim.readOnly {
		t.Error("state_get must be read-only and claim not")
	}
	if scriptEnqueue.flagged != nil || scriptClaim.flagged == nil || scriptComplete.flagged == nil {
		t.Error("enqueue must be refused by a full server, claim and complete not")
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

// TestShebangRefused: a server before Redis 7 reads a script's shebang
// line as Lua and refuses to compile it, which turns the store to
// scripts without flags; transient replies and a full server's refusal
// do not.
func TestShebangRefused(t *testing.T) {
	for msg, want := range map[string]bool{
		"ERR Error compiling script (new function): user_script:1: unexpected symbol near '#' ": true,
		"OOM command not allowed when used memory > 'maxmemory'.":                               false,
		"NOSCRIPT No matching script. Please use EVAL.":                                         false,
		"LOADING Redis is loading the dataset in memory":                                        false,
		"dial tcp 127.0.0.1:6379: connect: connection refused":                                  false,
	} {
		if got := shebangRefused(errors.New(msg)); got != want {
			t.Errorf("shebangRefused(%q) = %v, want %v", msg, got, want)
		}
	}
}

// TestLibrariesKeepTheirConstants: the number strings' memos are built
// where a library loads, not by the init a call runs first, in every
// library that has them.
func TestLibrariesKeepTheirConstants(t *testing.T) {
	seen := 0
	for _, sc := range allScripts {
		if !strings.Contains(sc.lib, "local LENP, NUMS\n") {
			continue
		}
		seen++
		const load = "\nLENP, NUMS = {}, {}\n"
		at := strings.Index(sc.lib, load)
		if at < 0 || strings.LastIndex(sc.lib[:at], "local function adkInit") > strings.LastIndex(sc.lib[:at], "\nend\n") {
			t.Errorf("%s: %q is not at the library's top level", sc.fn, strings.TrimSpace(load))
		}
	}
	if seen < 20 {
		t.Fatalf("%d libraries hold the number strings' memos; want the queue scripts' (20 or more)", seen)
	}
}
