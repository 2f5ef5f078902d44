package main

import (
	"testing"
	"time"
)

// TestInfoCPU reads a server's CPU time as the sum of used_cpu_sys and
// used_cpu_user, and refuses a reply that lacks either.
func TestInfoCPU(t *testing.T) {
	info := "# CPU\r\nused_cpu_sys:1.250000\r\nused_cpu_user:0.500000\r\nused_cpu_sys_children:9.000000\r\nused_cpu_user_children:9.000000\r\nused_cpu_sys_main_thread:1.000000\r\nused_cpu_user_main_thread:0.400000\r\n"
	got, err := infoCPU(info)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1750 * time.Millisecond; got != want {
		t.Errorf("infoCPU = %v, want %v", got, want)
	}
	if _, err := infoCPU("# CPU\r\nused_cpu_sys:1.0\r\n"); err == nil {
		t.Error("infoCPU accepted a reply without used_cpu_user")
	}
	if _, err := infoCPU("used_cpu_sys:x\r\nused_cpu_user:1\r\n"); err == nil {
		t.Error("infoCPU accepted a value that is not a number")
	}
}
