//go:build integration

package redisstore

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/adkit/adk/modules/redisstore/redistest"
)

// TestRecordFinishMatchesDecode checks, on the server's Lua, that the
// complete step's string edit of a record (recFinish, recPeek in
// record_lib.lua) gives byte for byte what decoding, setting fa and the
// state and re-encoding gives, and the same attempts, tenant, id and
// uniqueness window; and that a record it does not handle is left to the
// decode path rather than edited. The script touches no key.
func TestRecordFinishMatchesDecode(t *testing.T) {
	client := redistest.Client(t)
	lib, err := scriptFS.ReadFile("scripts/record_lib.lua")
	if err != nil {
		t.Fatal(err)
	}
	src := string(lib) + `
local v, us = ARGV[1], ARGV[2]
local pk = recPeek(v)
local nv, uf
if pk then
  nv, uf = recFinish(v, pk, us)
end
local r = decode(v)
if not r then
  return {pk and 'peeked' or 'nil', nv or ''}
end
local X = xget(r)
local wuf = X.uf
X.fa = us
xput(r, X)
r.s = 'k'
local want = encode(r)
if not nv then
  return {'fallback', want}
end
return {'edited', nv, want, uf, wuf, pk.a .. '|' .. pk.t .. '|' .. pk.i, r.a .. '|' .. r.t .. '|' .. r.i}
`
	lp := func(s string) string { return strconv.Itoa(len(s)) + ":" + s }
	headP := func(s, a, t, i, p string) string {
		return lp(s) + lp(a) + lp("boom") + lp("") + lp("1893456000000000000") + lp("") + lp("") + lp("n1") +
			lp(t) + lp(i) + lp(`{"k":"v:1"}`) + lp(p) + lp("000000000000002a"+lp(t)+lp(i))
	}
	head := func(s, a, t, i string) string { return headP(s, a, t, i, "\x00pay:load") }
	// Payloads whose length prefixes have one to five digits: the parser
	// reads prefixes of up to three from their bytes and longer ones
	// through a cut.
	pay := func(n int) string { return strings.Repeat("7:x", n/3+1)[:n] }
	ext := func(fields ...string) string {
		var s string
		for _, f := range fields {
			s += lp(f)
		}
		return s
	}
	full := ext("3", "", "sig", "", "", "", "", "", "", "", "", "", "3600000000", "")
	for name, c := range map[string]struct {
		v    string
		mode string
	}{
		"no extension":          {head("q", "0", "a:b{c}", "12:x"), "edited"},
		"full extension":        {head("q", "2", "t", "i") + lp(full), "edited"},
		"extension with fa set": {head("q", "1", "t", "i") + lp(ext("", "", "", "", "", "", "", "", "", "", "", "", "", "99")), "edited"},
		"short extension":       {head("q", "1", "t", "i") + lp(ext("5", "1")), "edited"},
		"unique only":           {head("q", "0", "t", "i") + lp(ext("", "", "", "", "", "", "", "", "", "", "", "", "60")), "edited"},
		"long state":            {head("qq", "0", "t", "i"), "fallback"},
		"trailing bytes":        {head("q", "0", "t", "i") + lp(full) + "zz", "fallback"},
		"payload of 9":          {headP("q", "0", "t", "i", pay(9)), "edited"},
		"payload of 10":         {headP("q", "0", "t", "i", pay(10)) + lp(full), "edited"},
		"payload of 999":        {headP("q", "0", "t", "i", pay(999)), "edited"},
		"payload of 1000":       {headP("q", "0", "t", "i", pay(1000)) + lp(full), "edited"},
		"payload of 12345":      {headP("q", "0", "t", "i", pay(12345)) + lp(full), "edited"},
		"long error":            {lp("q") + lp("0") + lp(pay(1500)) + headP("q", "0", "t", "i", "p")[len(lp("q")+lp("0")+lp("boom")):], "edited"},
		"prefix not a number":   {"1:q" + "x:0" + head("q", "0", "t", "i")[6:], "nil"},
		"member cut short":      {head("q", "0", "t", "i")[:len(head("q", "0", "t", "i"))-len(lp("000000000000002a"+lp("t")+lp("i")))] + "99999:zz", "fallback"},
		"empty":                 {"", "nil"},
		"cut short":             {head("q", "0", "t", "i")[:20], "nil"},
	} {
		t.Run(name, func(t *testing.T) {
			res, err := client.Eval(context.Background(), src, nil, c.v, "1893456000123456").StringSlice()
			if err != nil {
				t.Fatal(err)
			}
			if res[0] != c.mode {
				t.Fatalf("mode %q (%q); want %q", res[0], res, c.mode)
			}
			if c.mode == "edited" {
				if res[1] != res[2] || res[3] != res[4] || res[5] != res[6] {
					t.Errorf("edited %q uf %q fields %q; decoded %q uf %q fields %q", res[1], res[3], res[5], res[2], res[4], res[6])
				}
			}
		})
	}
}
